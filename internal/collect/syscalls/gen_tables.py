#!/usr/bin/env python3
"""Regenerates the syscall tables from Debian's linux-libc-dev headers
(go generate ./internal/collect/syscalls).

Since Linux 5.1 every architecture numbers new system calls alike, from
424 (pidfd_send_signal) on, so those go into one table (table_unified.go);
table_x86.go and table_generic.go keep only what differs below 424. The
script stops if an architecture ever disagrees with the unified numbers."""
import re
import sys

UNIFIED = 424

amd = {}
for line in open('/usr/include/x86_64-linux-gnu/asm/unistd_64.h'):
    m = re.match(r'#define __NR_(\w+)\s+(\d+)', line)
    if m:
        amd[int(m.group(2))] = m.group(1)
gen = {}
src = open('/usr/include/asm-generic/unistd.h').read()
for m in re.finditer(r'#define __NR(3264)?_(\w+)\s+(\d+)', src):
    name, num = m.group(2), int(m.group(3))
    if name in ('syscalls', 'arch_specific_syscall'):
        continue
    if m.group(1) == '3264' and name == 'fstatat':
        name = 'newfstatat'
    gen.setdefault(num, name)

unified = {}
for num in sorted(set(amd) | set(gen)):
    if num < UNIFIED:
        continue
    if amd.get(num) != gen.get(num):
        sys.exit('syscall %d is %s on amd64 but %s in asm-generic: the unified range no longer holds'
                 % (num, amd.get(num), gen.get(num)))
    unified[num] = amd[num]


def emit(fn, var, table, note):
    with open(fn, 'w') as f:
        f.write("// Code generated from %s by gen_tables.py; DO NOT EDIT.\n\n" % note)
        f.write('package syscalls\n\nvar %s = map[int]string{\n' % var)
        for k in sorted(table):
            f.write('\t%d: "%s",\n' % (k, table[k]))
        f.write('}\n')


def below(table):
    return {k: v for k, v in table.items() if k < UNIFIED}


emit('table_x86.go', 'amd64Names', below(amd), 'linux-libc-dev asm/unistd_64.h, numbers below %d' % UNIFIED)
emit('table_generic.go', 'genericNames', below(gen),
     'linux-libc-dev asm-generic/unistd.h (arm64, riscv64), numbers below %d' % UNIFIED)
emit('table_unified.go', 'unifiedNames', unified,
     'linux-libc-dev asm/unistd_64.h and asm-generic/unistd.h, numbers from %d (alike on every architecture)' % UNIFIED)
