# Imports many short modules, each dropped right after its import so its
# top-level code object (and its functions, docstrings) is freed at once,
# and keeps allocating strs of text (spaces, never a name) that take the
# freed memory. Used by cmd/sonde's Python tests: a sample taken in a
# module's top-level code has its name read later, when that code object
# is gone; the frame must be unknown, never one of these texts.
# python3 pyimports.py SECONDS (of CPU time); prints ready.
import importlib
import os
import sys
import tempfile
import time

sys.dont_write_bytecode = True

BODY = '''"""sonde module docstring {i}: text that is not a name."""
T = []
for k in range(2000):
    T.append(k * k % 7)


def f_{i}(x):
    """sonde function docstring {i}: text that is not a name, long enough to be a code object's size."""
    return x + {i}


class C_{i}:
    """sonde class docstring {i}: text that is not a name, long enough to be a code object's size."""

    def m(self):
        return f_{i}(len(T))
'''


def batch(d, n, first):
    for i in range(first, first + n):
        with open(os.path.join(d, "sonde_m_%d.py" % i), "w") as f:
            f.write(BODY.format(i=i))
    importlib.invalidate_caches()
    texts = []
    for i in range(first, first + n):
        name = "sonde_m_%d" % i
        mod = importlib.import_module(name)
        mod.C_0 = None
        del sys.modules[name]
        del mod
        # Texts of 100-130 characters: the size class of a 3.10 code object.
        texts.append(("sonde text %d, not a name: " % i) + "words and spaces " * (5 + i % 3))
        if len(texts) > 64:
            texts = texts[32:]


def main():
    end = time.process_time() + float(sys.argv[1])
    d = tempfile.mkdtemp(prefix="sonde-pyimports-")
    sys.path.insert(0, d)
    print("ready", flush=True)
    first = 0
    while time.process_time() < end:
        batch(d, 50, first)
        first += 50
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)


main()
