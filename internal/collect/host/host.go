// Package host describes the machine a measurement ran on — host name,
// kernel release, architecture, CPUs — in one place, so every recording
// and report says the same thing about it.
package host

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/model"
)

// Info is what sonde records about the machine.
type Info struct {
	Hostname string
	Kernel   string // uname -r
	Arch     string // GOARCH of this build, which is the machine's
	CPUs     int    // CPUs this process may run on
}

// Get reads the running machine's description; fields it cannot read stay empty.
func Get() Info {
	i := Info{Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	i.Hostname, _ = os.Hostname()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		i.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	return i
}

// Fill sets a recording's host name, kernel release and architecture.
func Fill(m *model.Meta) {
	i := Get()
	m.Hostname, m.Kernel, m.Arch = i.Hostname, i.Kernel, i.Arch
}
