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

// Create opens path for writing, or stdout when path is "".
func Create(path string) (*Output, error) {
	o := &Output{f: os.Stdout, name: "stdout"}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("creating output: %w", err)
		}
		o.f, o.name = f, path
	}
	o.Writer = bufio.NewWriterSize(o.f, 1<<16)
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
