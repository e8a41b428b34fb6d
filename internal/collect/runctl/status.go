package runctl

import "fmt"

// UsageError marks a bad command line: one line saying what is wrong and
// how to fix it, exit status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return UsageError{fmt.Sprintf(format, a...)} }

// ExitStatus ends sonde with a status and no message: the traced
// command's own status, passed through as perf does.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// ExitWith is nil for status 0.
func ExitWith(code int) error {
	if code == 0 {
		return nil
	}
	return ExitStatus(code)
}
