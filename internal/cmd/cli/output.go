package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/sonde-dev/sonde/internal/format/outfile"
)

// Output is where a command writes its result: a file (-o), written
// atomically (outfile: it appears complete or not at all), or a standard
// stream, buffered. Every write error is kept and returned by Close, so a
// full disk or a closed pipe ends the command with an error, never exit 0
// with a short output.
type Output struct {
	*bufio.Writer
	file *outfile.File // nil for a standard stream
	name string
}

// Stdout is a buffered standard output.
func Stdout() *Output { return stream(os.Stdout, "stdout") }

// Stderr is a buffered standard error (stat's counters go there, as perf
// stat's do, so they never mix with the command's output).
func Stderr() *Output { return stream(os.Stderr, "stderr") }

func stream(f *os.File, name string) *Output {
	return &Output{Writer: bufio.NewWriterSize(f, 1<<16), name: name}
}

// Create opens path for writing, or stdout when path is "" or "-".
func Create(path string) (*Output, error) { return CreateOr(path, Stdout()) }

// CreateOr opens path for writing, or returns std when path is "", or
// standard output when it is "-" (stat -o -).
func CreateOr(path string, std *Output) (*Output, error) {
	if path == "" {
		return std, nil
	}
	if path == outfile.Stdout {
		return Stdout(), nil
	}
	f, err := outfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating output: %w", err)
	}
	return &Output{Writer: bufio.NewWriterSize(f, 1<<16), file: f, name: path}, nil
}

// Close flushes the buffer and puts a file in place.
func (o *Output) Close() error {
	err := o.Flush()
	if o.file != nil {
		if err != nil {
			o.file.Abort()
		} else {
			err = o.file.Commit()
		}
	}
	if err != nil && o.file == nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // "write /dev/stdout": the stream is named below
			err = pe.Err
		}
		return fmt.Errorf("writing %s: %w", o.name, err)
	}
	return err // outfile's errors name the file
}

// Finish closes the output and returns err, or the error of closing when
// err is nil: `return out.Finish(write(out))`. A file is dropped when err
// is set, so a failed command leaves no partial output.
func (o *Output) Finish(err error) error {
	if err != nil {
		if o.file != nil {
			o.file.Abort()
		} else {
			o.Flush() // what a stream has shown so far stays shown
		}
		return err
	}
	return o.Close()
}

// WriteStdout writes a view to standard output: with asJSON its JSON,
// else its text.
func WriteStdout(asJSON bool, writeJSON func(*Output) error, writeText func(*Output)) error {
	out := Stdout()
	if asJSON {
		return out.Finish(writeJSON(out))
	}
	writeText(out)
	return out.Finish(nil)
}

// FileSize is a file's size for humans (outfile.Size; for "-", what was
// written to standard output).
func FileSize(path string) string { return outfile.Size(path) }

// FileName names an output path in messages: "standard output" for "-".
func FileName(path string) string { return outfile.Name(path) }
