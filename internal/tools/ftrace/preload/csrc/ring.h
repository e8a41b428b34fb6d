/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The shared-memory ring between the in-process recorder (recorder.c,
 * loaded into the traced program with LD_PRELOAD) and sonde, which
 * creates the file, maps it too and drains it. Little-endian, fixed
 * layout on every architecture (internal/tools/ftrace/preload.go mirrors it). */
#ifndef SONDE_FTRACE_RING_H
#define SONDE_FTRACE_RING_H

#include <stdint.h>

#define RING_MAGIC 0x31474e5252465453ULL /* "STFRRNG1" */

/* One completed call, written when the function returns. */
struct ring_call {
	uint64_t seq;      /* slot number + 1, stored last: the record is complete */
	uint64_t start_ns; /* entry, CLOCK_MONOTONIC */
	uint64_t dur_ns;
	uint64_t fn;       /* the function's run-time address */
	uint32_t tid;
	uint16_t depth;
	uint16_t flags;    /* 2: still running when the program exited */
};

struct ring_header {
	uint64_t magic;
	uint64_t slots;       /* records the ring holds (a power of two) */
	uint64_t head;        /* next slot to write (writers, atomically) */
	uint64_t tail;        /* next slot sonde reads (sonde) */
	uint64_t lost;        /* calls dropped: the ring was full */
	uint64_t load_bias;   /* main executable's load address (ELF address = fn - load_bias) */
	uint64_t min_dur_ns;  /* set by sonde: shorter calls are not written */
	uint32_t max_depth;   /* set by sonde: deeper calls are not written (0: all) */
	uint32_t attached;    /* set by the recorder once it writes */
	uint64_t overflow;    /* calls deeper than the recorder's stack: not timed */
	uint64_t _pad[7];     /* header is 128 bytes; records follow */
};

#endif
