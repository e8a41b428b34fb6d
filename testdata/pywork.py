# alpha_py, beta_py and gamma_py do 50, 30 and 20% of the work: each runs
# step() over 2000, 1200 and 800 numbers a round. Used by cmd/sonde's Python
# tests: python3 pywork.py SECONDS (of CPU time, so a busy machine still
# gives as many samples)
import sys
import time


def step(n):
    s = 0
    for i in range(1000, 1000 + n):
        s += i * i % 7
    return s


def alpha_py():
    return step(2000)


def beta_py():
    return step(1200)


def gamma_py():
    return step(800)


def main():
    # What makes the split 50/30/20 of CPU time, not only of iterations:
    # - every number is above 256, so each iteration allocates the same
    #   objects (CPython keeps 0..256 ready-made: over range(n) the
    #   numbers below 257 were cheap, alpha's share of them smaller, and
    #   beside a memory-hungry build alpha took 53-56%);
    # - a round lasts about 0.2 ms and ends with 0 to 90 µs of random
    #   work in main, so where in a round each sample falls wanders at
    #   random, over the whole round every hundred samples or so (rounds
    #   of 0.48 ms with less random work once came within 1% of half a
    #   period at 999 Hz, and one function lost 3 points to its
    #   neighbour for the whole run);
    # - the clock is read every 16 rounds: a system call before every
    #   round slowed the function after it.
    # Imported here to keep step's line numbers.
    import random
    end = time.process_time() + float(sys.argv[1])
    print("ready", flush=True)
    while time.process_time() < end:
        for _ in range(16):
            alpha_py()
            beta_py()
            gamma_py()
            step(random.randrange(2000))


main()
