# Blocks in time.sleep inside sleepy_py, all but a few microseconds of
# its life: python3 pysleep.py SECONDS. Prints "ready" once looping.
import sys
import time


def sleepy_py():
    time.sleep(0.02)


def main():
    end = time.time() + float(sys.argv[1])
    print("ready", flush=True)
    while time.time() < end:
        sleepy_py()


main()
