/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records shared by files.bpf.c and its Go loader (bpf2go -type). */
#ifndef SONDE_FILES_H
#define SONDE_FILES_H

/* Path components sent per file: the file's own name first, then its
 * parents up to the root, across mounts. Deeper paths keep their last
 * FILES_PATH_DEPTH components; longer names are cut at FILES_NAME_LEN-1. */
#define FILES_PATH_DEPTH 16
#define FILES_NAME_LEN 64

/* A file in one process: the stats map's key. */
struct files_key {
	__u32 pid;
	__u32 dev; /* the superblock's s_dev (the kernel's major<<20|minor) */
	__u64 ino;
};

/* A file's counts in one process since the last interval. */
struct files_stats {
	__u64 reads;       /* read-side calls that returned >= 0 */
	__u64 writes;      /* write-side calls that returned >= 0 */
	__u64 read_bytes;  /* bytes they returned */
	__u64 write_bytes;
	__u32 tid;         /* the thread that first touched the file */
	__u32 mode;        /* the inode's i_mode (S_IFMT bits say the type) */
	char comm[16];
};

enum files_rec_type {
	FILES_REC_PATH = 1, /* struct files_path */
	FILES_REC_SLOW = 2, /* struct files_slow */
};

/* Where a file is, sent once per file (dev, ino) on the ring. */
struct files_path {
	__u32 type; /* FILES_REC_PATH */
	__u32 dev;
	__u64 ino;
	__u64 magic; /* the filesystem's s_magic: pipefs, sockfs, anon inodes */
	__u32 mode;
	__u32 depth;     /* components in names */
	__u32 truncated; /* the walk stopped before the root */
	__u32 pad;
	char names[FILES_PATH_DEPTH][FILES_NAME_LEN];
};

/* One slow read or write (fileslower). */
struct files_slow {
	__u32 type; /* FILES_REC_SLOW */
	__u32 pid;
	__u32 tid;
	__u32 nr;   /* the syscall's number on this architecture */
	__u64 ino;
	__u32 dev;
	__u32 mode;
	__u64 start_ns;   /* CLOCK_MONOTONIC at the syscall's entry */
	__u64 latency_ns; /* entry to exit */
	__s64 bytes;      /* the syscall's return value */
	__u32 write;      /* 0: the read side, 1: the write side */
	__u32 pad;
	char comm[16];
};

/* Syscall numbers the programs look up (the highest in use is near 470). */
#define FILES_NR_MAX 512

/* What a syscall number is to the programs (io_kind): where its fds are. */
enum files_io {
	FILES_IO_NONE = 0,     /* not traced */
	FILES_IO_READ = 1,     /* read, pread64, readv, preadv, preadv2: fd is the first argument */
	FILES_IO_WRITE = 2,    /* write, pwrite64, writev, pwritev, pwritev2 */
	FILES_IO_SENDFILE = 3, /* sendfile(out_fd, in_fd, ...) */
	FILES_IO_SPLICE = 4,   /* splice, copy_file_range(fd_in, off_in, fd_out, ...) */
};

/* Indexes of the counters map. */
enum files_counter {
	FILES_LOST_INFLIGHT = 0, /* calls not timed: the in-flight map was full */
	FILES_LOST_STATS = 1,    /* calls not counted: the stats map was full */
	FILES_LOST_RING = 2,     /* records dropped: the ring buffer was full */
	FILES_NO_FILE = 3,       /* fds that named no open file at the exit */
	FILES_NCOUNTERS = 4,
};

#endif
