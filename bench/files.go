package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

var (
	onlyFiles  = flag.Bool("files", false, "run only the filetop/fileslower cost comparison with bpftrace")
	filesCalls = flag.Int("files-calls", 1000000, "pread64 calls in the files workload")
	filesReps  = flag.Int("files-reps", 3, "repetitions of each files configuration")
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

// progStats sums the kernel's run time and run count of the BPF programs
// with ids not in before and one of names (other agents may load programs
// at the same time), and says how many of names it found.
func progStats(before map[ebpf.ProgramID]bool, names []string) (ns time.Duration, runs uint64, n int) {
	found := map[string]bool{}
	defer func() { n = len(found) }()
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return
		}
		id = next
		if before[id] {
			continue
		}
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		info, err := p.Info()
		if err == nil && slices.Contains(names, info.Name) {
			if st, err := p.Stats(); err == nil {
				ns += st.Runtime
				runs += st.RunCount
				found[info.Name] = true
			}
		}
		p.Close()
	}
}

func progIDs() map[ebpf.ProgramID]bool {
	ids := map[ebpf.ProgramID]bool{}
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return ids
		}
		id = next
		ids[id] = true
	}
}

// filesCost: 6. filetop and fileslower against bpftrace doing the same on
// the same tracepoints, and untraced: a program making -files-calls
// one-byte pread64s of a cached file, timed by the wall clock, and each
// tracer's programs timed by the kernel.
func filesCost(dir string) {
	if _, err := exec.LookPath("bpftrace"); err != nil {
		fmt.Println("\n6. files: bpftrace not found (apt-get install bpftrace); skipped")
		return
	}
	// Run-time stats stay on while this fd is open, whatever the sysctl
	// kernel.bpf_stats_enabled says (others may turn it off).
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		fail("enabling BPF run-time stats: " + err.Error())
	}
	defer stats.Close()
	_, self, _, _ := runtime.Caller(0)
	prog := filepath.Join(dir, "fileio")
	if out, err := exec.Command("gcc", "-O1", "-o", prog, filepath.Join(filepath.Dir(self), "..", "testdata", "fileio.c")).CombinedOutput(); err != nil {
		fail(fmt.Sprintf("gcc: %v %s", err, out))
	}
	data := filepath.Join(dir, "spin.dat")
	top, slower := filepath.Join(dir, "top.bt"), filepath.Join(dir, "slower.bt")
	for f, s := range map[string]string{data: "x", top: bpftraceTop, slower: bpftraceSlower} {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			fail(err.Error())
		}
	}
	// The programs' names as the kernel keeps them (15 bytes).
	sondeProgs := []string{"enter_read", "exit_io"}
	bpftraceProgs := []string{"sys_enter_pread", "sys_exit_pread6"}
	configs := []struct {
		name  string
		args  []string
		progs []string
	}{
		{"untraced", nil, nil},
		{"sonde filetop", []string{*sondeBin, "filetop", "-d", "10m"}, sondeProgs},
		{"bpftrace (filetop's work)", []string{"bpftrace", top}, bpftraceProgs},
		{"sonde fileslower", []string{*sondeBin, "fileslower", "-d", "10m"}, sondeProgs},
		{"bpftrace (fileslower's work)", []string{"bpftrace", slower}, bpftraceProgs},
	}
	wall := map[string][]float64{}
	perRun := map[string][]float64{}
	for r := 0; r < *filesReps; r++ {
		for i := range configs {
			c := configs[(i+r)%len(configs)]
			before := progIDs()
			var tracer *exec.Cmd
			if c.args != nil {
				tracer = exec.Command(c.args[0], c.args[1:]...)
				if err := tracer.Start(); err != nil {
					fail(err.Error())
				}
				// Loaded programs show first; attaching follows within ms.
				for t0 := time.Now(); ; time.Sleep(50 * time.Millisecond) {
					if _, _, n := progStats(before, c.progs); n == len(c.progs) {
						break
					}
					if time.Since(t0) > 3*time.Minute {
						fail(c.name + ": its BPF programs are not loaded after 3 minutes")
					}
				}
				time.Sleep(time.Second)
			}
			ns0, runs0, _ := progStats(before, c.progs)
			start := time.Now()
			if out, err := exec.Command(prog, "spin", data, strconv.Itoa(*filesCalls)).CombinedOutput(); err != nil {
				fail(fmt.Sprintf("fileio: %v %s", err, out))
			}
			wall[c.name] = append(wall[c.name], float64(time.Since(start).Nanoseconds())/float64(*filesCalls))
			ns1, runs1, _ := progStats(before, c.progs)
			if os.Getenv("SONDE_BENCH_DEBUG") != "" {
				fmt.Fprintf(os.Stderr, "%s: %v in %d runs\n", c.name, ns1-ns0, runs1-runs0)
			}
			if runs1 > runs0 {
				// Two programs (entry and exit) per syscall.
				perRun[c.name] = append(perRun[c.name], 2*float64(ns1-ns0)/float64(runs1-runs0))
			}
			if tracer != nil {
				tracer.Process.Signal(syscall.SIGINT)
				if err := tracer.Wait(); err != nil && !errors.Is(err, os.ErrProcessDone) {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						fail(c.name + ": " + err.Error())
					}
				}
			}
		}
		fmt.Fprintf(os.Stderr, "\rfiles: repetition %d/%d", r+1, *filesReps)
	}
	fmt.Fprintln(os.Stderr)
	fmt.Printf("\n6. File tracing: %d one-byte pread64s of a cached file (%d interleaved runs, medians)\n", *filesCalls, *filesReps)
	fmt.Printf("   %-30s %12s %12s %22s\n", "", "wall ns/call", "Δ ns/call", "BPF ns/syscall (kernel)")
	base := median(wall["untraced"])
	for _, c := range configs {
		k := "-"
		if v := perRun[c.name]; len(v) > 0 {
			k = fmt.Sprintf("%.0f", median(v))
		}
		fmt.Printf("   %-30s %12.0f %+12.0f %22s\n", c.name, median(wall[c.name]), median(wall[c.name])-base, k)
	}
}
