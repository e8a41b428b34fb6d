# Spins with its stack 20 Python frames deep (rec(19) and the module's
# frame): python3 pydeep.py SECONDS. Prints "ready" once it is spinning.
import sys
import time


def rec(d):
    if d == 0:
        s = 0
        for i in range(20000):
            s += i * i % 7
        return s
    return rec(d - 1)


end = time.time() + float(sys.argv[1])
rec(19)
print("ready", flush=True)
while time.time() < end:
    rec(19)
