package symbolize

import (
	"fmt"
	"os"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
)

// Recorded names the locations of a recording that was cut before its
// final chunk (Meta.Unsymbolized): its objects are known by path and
// build-id only, so they are looked up on this machine now, as perf report
// does with perf.data. Objects whose build-id no longer matches stay
// unnamed with a warning.
func Recorded(p *model.Profile) {
	objs := make([]Object, len(p.DSOs))
	for i, d := range p.DSOs {
		switch d.Kind {
		case model.DSOKernel:
			objs[i] = KernelObject
		case model.DSOUser, model.DSOVDSO:
			objs[i] = Object{Kind: d.Kind, Path: d.Name, BuildID: d.BuildID}
		case model.DSOUnknown:
			var pid uint32
			if _, err := fmt.Sscanf(d.Name, "[anon:%d]", &pid); err == nil {
				objs[i] = Object{Kind: model.DSOJIT, Pid: pid}
			}
		}
	}
	Default().Profile(p, objs)
	p.Meta.Unsymbolized = false
	p.Meta.Warnings = append(p.Meta.Warnings, "names were looked up now, on "+hostname()+", because the recording ended before sonde could name them")
}

func hostname() string {
	if h, err := readFirstLine("/proc/sys/kernel/hostname"); err == nil && h != "" {
		return h
	}
	return "this machine"
}

func readFirstLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}
