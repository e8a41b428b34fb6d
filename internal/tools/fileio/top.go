package fileio

import (
	"cmp"
	"context"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"io"
	"slices"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// TopOptions configure filetop.
type TopOptions struct {
	Pid      int
	Cgroup   *cgroup.Target // only its tasks' calls (nil: every task)
	Command  []string       // run and trace this command (its process only)
	All      bool           // pipes, sockets and devices too, not only regular files
	Duration time.Duration
	Interval time.Duration    // a report every interval (0: one at the end)
	Sort     string           // all, reads, writes, rbytes or wbytes
	Rows     int              // rows in the text view (0: all)
	Clear    bool             // clear the terminal before each text report
	Target   string           // what is traced, as the text names it
	OnReport func(*TopReport) // each interval's report
}

// Sorts are the orders -s/--sort takes.
var Sorts = []string{"all", "reads", "writes", "rbytes", "wbytes"}

// File is one file's reads and writes by one process.
type File struct {
	Pid        uint32 `json:"pid"`
	Tid        uint32 `json:"tid"` // the thread that first touched the file in the interval
	Comm       string `json:"comm"`
	Path       string `json:"path"`
	Kind       string `json:"kind"` // regular, pipe, socket, other
	Dev        string `json:"dev"`  // the filesystem's device, major:minor
	Ino        uint64 `json:"ino"`
	Reads      uint64 `json:"reads"`
	Writes     uint64 `json:"writes"`
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
}

// TopReport is one interval's files (or the whole run's).
type TopReport struct {
	jsonout.Run
	Attach string `json:"attach"` // how the calls were traced
	Files  []File `json:"files"`  // in the order asked for
	Lost   uint64 `json:"lost"`   // calls or paths dropped: full maps or ring
	lost   Lost
	o      TopOptions
	at     time.Time
}

// Top counts reads and writes per process and file until the run ends,
// with a report every o.Interval (o.OnReport) and one at the end.
func Top(ctx context.Context, o TopOptions) (*TopReport, error) {
	if !slices.Contains(Sorts, o.Sort) {
		return nil, fmt.Errorf("sort order %q: want one of %v", o.Sort, Sorts)
	}
	var maps filesMaps
	s, err := session(&maps, o.Pid, o.Cgroup, o.Command, map[string]any{filesVarAllFiles: o.All})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ps := &paths{m: map[fileID]string{}}
	if err := readEvents(s, &maps, ps, nil); err != nil {
		return nil, err
	}
	snap := func(_ time.Time, elapsed time.Duration) (*TopReport, error) {
		return topReport(&maps, ps, o, elapsed)
	}
	iv := bpfskel.NewIntervals(snap, bpfskel.ClearMap[filesFilesKey](maps.Stats), o.OnReport).Follow(s)
	ro := runctl.Options{Duration: o.Duration}
	if o.Interval > 0 && o.OnReport != nil {
		ro.Interval, ro.OnInterval = o.Interval, iv.Tick
	}
	run, err := s.Run(ctx, ro) // every path is read when it returns
	if err != nil {
		return nil, err
	}
	r, err := iv.Final()
	if err != nil {
		return nil, err
	}
	if len(o.Command) > 0 {
		r.ExitCode = &run.ExitCode
	}
	return r, nil
}

func topReport(m *filesMaps, ps *paths, o TopOptions, elapsed time.Duration) (*TopReport, error) {
	r := &TopReport{Run: jsonout.Run{Command: "filetop", Target: o.Target, DurationNS: jsonout.NS(elapsed)},
		Attach: Mode, Files: []File{}, o: o, at: time.Now()}
	var k filesFilesKey
	var v filesFilesStats
	it := m.Stats.Iterate()
	for it.Next(&k, &v) {
		r.Files = append(r.Files, File{Pid: k.Pid, Tid: v.Tid, Comm: bpfmaps.CString(v.Comm[:]), Path: ps.name(k.Dev, k.Ino),
			Kind: Kind(v.Mode), Dev: Dev(k.Dev), Ino: k.Ino, Reads: v.Reads, Writes: v.Writes, ReadBytes: v.ReadBytes, WriteBytes: v.WriteBytes})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the per-file counts: %w", err)
	}
	SortFiles(r.Files, o.Sort)
	var err error
	if r.lost, err = readLost(m); err != nil {
		return nil, err
	}
	r.Lost = r.lost.Total()
	return r, nil
}

// SortFiles orders files, largest first, by: all (bytes read and
// written, then calls), reads, writes, rbytes or wbytes; ties by pid and
// path, so reports are stable.
func SortFiles(fs []File, by string) {
	key := func(f File) [2]uint64 {
		switch by {
		case "reads":
			return [2]uint64{f.Reads, f.ReadBytes}
		case "writes":
			return [2]uint64{f.Writes, f.WriteBytes}
		case "rbytes":
			return [2]uint64{f.ReadBytes, f.Reads}
		case "wbytes":
			return [2]uint64{f.WriteBytes, f.Writes}
		}
		return [2]uint64{f.ReadBytes + f.WriteBytes, f.Reads + f.Writes}
	}
	slices.SortStableFunc(fs, func(a, b File) int {
		ka, kb := key(a), key(b)
		return cmp.Or(cmp.Compare(kb[0], ka[0]), cmp.Compare(kb[1], ka[1]), cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Path, b.Path))
	})
}

// kindLetter is libbpf-tools filetop's T column.
func kindLetter(kind string) string {
	switch kind {
	case Regular:
		return "R"
	case Pipe:
		return "P"
	case Socket:
		return "S"
	}
	return "O"
}

// WriteText prints the report as filetop does: a time line, then the top
// rows; the screen is cleared first with o.Clear.
func (r *TopReport) WriteText(w io.Writer) {
	if r.o.Clear {
		io.WriteString(w, "\033[H\033[2J")
	}
	fmt.Fprintf(w, "%s  %s, %s, %s\n", r.at.Format("15:04:05"), cmp.Or(r.Target, "system wide"),
		time.Duration(r.DurationNS).Round(time.Millisecond), r.lost)
	fmt.Fprintf(w, "%-7s %-7s %-16s %6s %6s %10s %10s %s %s\n", "PID", "TID", "COMM", "READS", "WRITES", "R_KiB", "W_KiB", "T", "FILE")
	for i, f := range r.Files {
		if r.o.Rows > 0 && i >= r.o.Rows {
			fmt.Fprintf(w, "# %d more files (-r 0 for all)\n", len(r.Files)-i)
			break
		}
		fmt.Fprintf(w, "%-7d %-7d %-16s %6d %6d %10.1f %10.1f %s %s\n", f.Pid, f.Tid, f.Comm, f.Reads, f.Writes,
			float64(f.ReadBytes)/1024, float64(f.WriteBytes)/1024, kindLetter(f.Kind), f.Path)
	}
	fmt.Fprintln(w)
}

// WriteJSON writes the report as one document.
func (r *TopReport) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
