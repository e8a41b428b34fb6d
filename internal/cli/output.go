package cli

import (
	"bufio"
	"fmt"
	"os"
)

// Output is where a command writes its result: a file (-o) or stdout,
// buffered. Close flushes, and closes the file.
type Output struct {
	*bufio.Writer
	f    *os.File
	name string
}

// Stdout is a buffered standard output.
func Stdout() *Output {
	return &Output{Writer: bufio.NewWriterSize(os.Stdout, 1<<16), f: os.Stdout, name: "stdout"}
}

// Create opens path for writing, or stdout when path is "".
func Create(path string) (*Output, error) {
	o := Stdout()
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("creating output: %w", err)
		}
		o.f, o.name = f, path
		o.Writer.Reset(f)
	}
	return o, nil
}

// Close flushes the buffer and closes the file (not stdout).
func (o *Output) Close() error {
	err := o.Flush()
	if o.f != os.Stdout {
		if cerr := o.f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", o.name, err)
	}
	return nil
}

// Finish closes the output and returns err, or the error of closing when
// err is nil: `return out.Finish(write(out))`.
func (o *Output) Finish(err error) error {
	if cerr := o.Close(); err == nil {
		err = cerr
	}
	return err
}

// FileSize is a file's size for humans (KiB, MiB, GiB), "?" when unknown.
func FileSize(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	n := float64(st.Size())
	for _, u := range []struct {
		unit string
		size float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			return fmt.Sprintf("%.1f %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d B", st.Size())
}
