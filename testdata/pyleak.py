# Allocates 64 KB buffers in leak_py and keeps them (2 MB a second),
# frees nothing: python3 pyleak.py SECONDS. Prints "ready" once looping.
import sys
import time

kept = []


def leak_py():
    kept.append(bytearray(65536))


def main():
    end = time.time() + float(sys.argv[1])
    print("ready", flush=True)
    while time.time() < end:
        leak_py()
        time.sleep(0.03)


main()
