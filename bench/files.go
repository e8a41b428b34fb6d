package main

import (
	"os"
	"path/filepath"
	"strconv"
)

// The bpftrace programs doing what filetop and fileslower do for pread64:
// the fd kept at the entry, resolved at the exit through the task's file
// table to the inode, counted per (pid, comm, dev, ino) for regular
// files; or timed, and printed when at least 10 ms.
const (
	bpftraceTop = `tracepoint:syscalls:sys_enter_pread64 { @fd[tid] = args->fd; }
tracepoint:syscalls:sys_exit_pread64 /@fd[tid]/ {
  if (args->ret >= 0) {
    $f = *(curtask->files->fdt->fd + @fd[tid]);
    $i = $f->f_inode;
    if (($i->i_mode & 0xf000) == 0x8000) {
      @reads[pid, comm, $i->i_sb->s_dev, $i->i_ino] = count();
      @rbytes[pid, comm, $i->i_sb->s_dev, $i->i_ino] = sum(args->ret);
    }
  }
  delete(@fd[tid]);
}
`
	bpftraceSlower = `tracepoint:syscalls:sys_enter_pread64 { @ts[tid] = nsecs; @fd[tid] = args->fd; }
tracepoint:syscalls:sys_exit_pread64 /@ts[tid]/ {
  $d = nsecs - @ts[tid];
  if ($d >= 10000000 && args->ret >= 0) {
    $f = *(curtask->files->fdt->fd + @fd[tid]);
    printf("%s %d %d %s\n", comm, pid, $d, str($f->f_path.dentry->d_name.name));
  }
  delete(@ts[tid]); delete(@fd[tid]);
}
`
)

// fileCostCases are filetop's and fileslower's rows of the cost table:
// one-byte pread64s of a cached file (testdata/fileio.c spin, built into
// dir by build), every tool system-wide as every row; bpftrace does the
// same work on the same tracepoints.
func fileCostCases(dir string, build func(string) string) []costCase {
	bin := build("fileio")
	data := filepath.Join(dir, "spin.dat")
	if err := os.WriteFile(data, []byte("x"), 0o644); err != nil {
		fail(err.Error())
	}
	n := 300000
	work := func() (uint64, string) {
		mustRun(bin, "spin", data, strconv.Itoa(n))
		return uint64(n), "pread64 calls"
	}
	return []costCase{
		{tool: "filetop", sonde: []string{"filetop", "-d", "1h"}, peerName: "bpftrace filetop", peer: []string{"bpftrace", "-e", bpftraceTop}, work: work},
		{tool: "fileslower", sonde: []string{"fileslower", "-d", "1h"}, peerName: "bpftrace fslower", peer: []string{"bpftrace", "-e", bpftraceSlower}, work: work},
	}
}
