/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Shared between funclat.bpf.c and Go (bpf2go -type). */
#ifndef SONDE_FUNCLAT_H
#define SONDE_FUNCLAT_H

/* At most this many functions per run (the attach cookie indexes them). */
#define MAX_FUNCS 64

#endif
