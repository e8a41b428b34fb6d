# alpha_py, beta_py and gamma_py do 50, 30 and 20% of the work: each runs
# step() over 5000, 3000 and 2000 numbers. Used by cmd/sonde's Python
# tests: python3 pywork.py SECONDS (of CPU time, so a busy machine still
# gives as many samples)
import sys
import time


def step(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def alpha_py():
    return step(5000)


def beta_py():
    return step(3000)


def gamma_py():
    return step(2000)


def main():
    # Each round ends with a random amount of work in main itself: a round
    # lasts about a millisecond here, as long as a sampling period at 999
    # Hz, and rounds of one length let the samples fall at the same few
    # points of the round for seconds (alpha/beta/gamma came out
    # 50.5/26.5/23.1 once in CI). Imported here to keep step's line numbers.
    import random
    end = time.process_time() + float(sys.argv[1])
    print("ready", flush=True)
    while time.process_time() < end:
        alpha_py()
        beta_py()
        gamma_py()
        step(random.randrange(1000))


main()
