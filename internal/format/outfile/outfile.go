// Package outfile writes the files sonde's commands produce (data files,
// flame graphs, pprof profiles, stat -o, reports) atomically: into a
// unique temporary file in the destination's directory, synced and then
// renamed over the destination. A full disk, a failed render or a killed
// writer therefore never leaves a 0-byte or half-written file under the
// name asked for, and an existing file there stays as it was until the new
// one is complete. A link is followed (the file it points to is replaced,
// not the link), and a path that is not a regular file (/dev/null,
// /dev/stdout, a FIFO) is written in place: renaming over it would replace
// the device. (record streams its data file instead, so a recording
// cut short still holds what it had: see datafile.Create.)
package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Stdout is the path that names standard output, as perf's -o - and
// sonde's -i - take it.
const Stdout = "-"

// stdout is where a file named Stdout is written: standard output, or the
// copy of it TakeStdout kept.
var (
	stdoutMu sync.Mutex
	stdout   = os.Stdout
	written  int64 // bytes written to it, for the summaries that give a size
)

// TakeStdout keeps standard output for a data file written to Stdout and
// points file descriptor 1 at standard error: the report, a traced
// command's output and anything else that writes to standard output then
// goes to standard error (as perf record -o - prints its messages there),
// and the data reach the pipe unmixed. Call it before anything is started
// or written.
func TakeStdout() error {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return fmt.Errorf("keeping standard output for the data: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		unix.Close(fd)
		return fmt.Errorf("sending other output to standard error: %w", err)
	}
	stdout = os.NewFile(uintptr(fd), "standard output")
	return nil
}

// StdoutIsTerminal says whether standard output (the one a file named
// Stdout is written to) is a terminal: binary data must not go there.
func StdoutIsTerminal() bool {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	_, err := unix.IoctlGetTermios(int(stdout.Fd()), unix.TCGETS)
	return err == nil
}

// StdoutFile is the file a path named Stdout writes to, counting what is
// written (Size(Stdout) says it).
func StdoutFile() io.Writer { return stdoutWriter{} }

type stdoutWriter struct{}

func (stdoutWriter) Write(p []byte) (int, error) {
	stdoutMu.Lock()
	f := stdout
	stdoutMu.Unlock()
	n, err := f.Write(p)
	atomic.AddInt64(&written, int64(n))
	return n, err
}

// Name is how messages name path: "standard output" for Stdout.
func Name(path string) string {
	if path == Stdout {
		return "standard output"
	}
	return path
}

// Mode is the permission of the files written (os.CreateTemp's 0600 is
// too narrow for outputs meant to be shared, as perf's and pprof's are).
const Mode = 0o644

// Check says whether a file can be written at path, before any work is
// done rather than after.
func Check(path string) error {
	if path == "" {
		return errors.New("no output file given")
	}
	if path == Stdout {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give a file name", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("cannot write %s: directory %s: %w", path, dir, err)
	}
	return nil
}

// File is an output file being written. Commit puts it in place; Abort
// (or any failure in Commit) removes it.
type File struct {
	f       *os.File
	std     bool // standard output (Stdout): f is nil, never closed
	path    string
	inPlace bool  // a device or FIFO, written where it is
	err     error // the first write error, reported by Commit
}

// Create starts writing path.
func Create(path string) (*File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	if path == Stdout {
		return &File{std: true, path: Name(path), inPlace: true}, nil
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		return &File{f: f, path: path, inPlace: true}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return &File{f: f, path: path}, nil
}

// Path is the destination.
func (f *File) Path() string { return f.path }

// Write writes to the temporary file. Errors read "writing PATH: cause",
// naming the destination (the temporary name means nothing to the user),
// so callers need not name the file again.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	var n int
	var err error
	if f.std {
		n, err = StdoutFile().Write(p)
	} else {
		n, err = f.f.Write(p)
	}
	if err != nil {
		f.err = f.fail("writing", err)
	}
	return n, f.err
}

func (f *File) fail(doing string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", doing, f.path, err)
}

// Commit syncs the file and renames it over the destination.
func (f *File) Commit() error {
	if f.std {
		return f.err // standard output stays open for what follows
	}
	if f.inPlace {
		if err := f.f.Close(); f.err == nil && err != nil {
			f.err = f.fail("writing", err)
		}
		return f.err
	}
	err := f.err
	if err == nil {
		if e := f.f.Sync(); e != nil {
			err = f.fail("writing", e) // delayed allocation failures surface here
		}
	}
	if e := f.f.Chmod(Mode); err == nil && e != nil {
		err = f.fail("setting the mode of", e)
	}
	if e := f.f.Close(); err == nil && e != nil {
		err = f.fail("writing", e)
	}
	if err == nil {
		if e := os.Rename(f.f.Name(), f.path); e != nil {
			err = fmt.Errorf("putting %s in place: %w", f.path, e)
		}
	}
	if err != nil {
		os.Remove(f.f.Name())
	}
	return err
}

// Abort drops the file; the destination is left as it was.
func (f *File) Abort() {
	if f.std {
		return
	}
	f.f.Close()
	if !f.inPlace {
		os.Remove(f.f.Name())
	}
}

// Write writes path atomically with write, buffered.
func Write(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		f.Abort()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// Size is a file's size for humans (KiB, MiB, GiB), "?" when unknown.
func Size(path string) string {
	var size int64
	if path == Stdout {
		size = atomic.LoadInt64(&written)
	} else {
		st, err := os.Stat(path)
		if err != nil {
			return "?"
		}
		size = st.Size()
	}
	n := float64(size)
	for _, u := range []struct {
		unit string
		size float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			return fmt.Sprintf("%.1f %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d B", size)
}
