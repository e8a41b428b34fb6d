# Two threads run work() under their own function: thread_a_py in a new
# thread, main_b_py in the main one, for SECONDS of wall time (they share
# the GIL): python3 pythreads.py SECONDS.
import sys
import threading
import time


def work(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def thread_a_py(end):
    while time.time() < end:
        work(10000)


def main_b_py(end):
    while time.time() < end:
        work(10000)


end = time.time() + float(sys.argv[1])
t = threading.Thread(target=thread_a_py, args=(end,))
t.start()
main_b_py(end)
t.join()
