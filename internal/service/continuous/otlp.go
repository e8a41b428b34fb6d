package continuous

import (
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	cgroupkit "github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/model"
)

// Process is what labels one process's profile: OpenTelemetry's resource
// attributes (semantic conventions for host, process, container, service).
type Process struct {
	Pid     int32
	Exe     string // process.executable.name: the main thread's comm
	Cgroup  string // process.linux.cgroup (v2 path)
	Service string // service.name
	// Container is a container id found in the cgroup path, "" for none;
	// PodUID the Kubernetes pod's uid (cgroup.ContainerOf).
	Container string
	PodUID    string
}

// serviceUnit is a systemd service in a cgroup path.
var serviceUnit = regexp.MustCompile(`/([^/]+)\.service(?:/|$)`)

// Label names a process: a container's id, else the systemd service whose
// cgroup holds it, else its executable stands for its service name.
func Label(pid int32, comm, cgroup string) Process {
	p := Process{Pid: pid, Exe: comm, Cgroup: cgroup, Service: comm}
	c := cgroupkit.ContainerOf(cgroup)
	p.Container, p.PodUID = c.ID, c.PodUID
	if m := serviceUnit.FindStringSubmatch(cgroup); m != nil && p.Container == "" {
		p.Service = m[1]
	}
	return p
}

// Convert turns one period's on-CPU profile into OTLP profiles: one
// resource per process (host, pid, executable, cgroup, container,
// service), its samples counted per stack, functions named on this host.
// cgroupOf looks up a process's cgroup.
func Convert(p *model.Profile, host string, periodNS int64, cgroupOf func(pid int32) string) pprofile.Profiles {
	out := pprofile.NewProfiles()
	d := newDict(out.Dictionary())
	type key struct {
		pid   int32
		stack int32
	}
	counts := map[key]int64{}
	var order []key
	comm := map[int32]string{}
	for _, s := range p.Samples {
		th := p.Threads[s.Thread]
		k := key{th.Pid, s.Stack}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
		if th.Pid == th.Tid || comm[th.Pid] == "" {
			comm[th.Pid] = th.Comm
		}
	}
	profiles := map[int32]pprofile.Profile{}
	for _, k := range order {
		prof, ok := profiles[k.pid]
		if !ok {
			rp := out.ResourceProfiles().AppendEmpty()
			proc := Label(k.pid, comm[k.pid], cgroupOf(k.pid))
			setResource(rp.Resource().Attributes(), host, proc)
			sp := rp.ScopeProfiles().AppendEmpty()
			sp.Scope().SetName("sonde")
			prof = sp.Profiles().AppendEmpty()
			prof.SampleType().SetTypeStrindex(d.str("samples"))
			prof.SampleType().SetUnitStrindex(d.str("count"))
			prof.PeriodType().SetTypeStrindex(d.str("cpu"))
			prof.PeriodType().SetUnitStrindex(d.str("nanoseconds"))
			prof.SetPeriod(periodNS)
			prof.SetTime(pcommon.Timestamp(p.Meta.StartUnixNS))
			prof.SetDurationNano(p.Meta.DurationNS)
			profiles[k.pid] = prof
		}
		s := prof.Samples().AppendEmpty()
		s.SetStackIndex(d.stack(p, k.stack))
		s.Values().Append(counts[k])
	}
	return out
}

func setResource(a pcommon.Map, host string, p Process) {
	a.PutStr("host.name", host)
	a.PutInt("process.pid", int64(p.Pid))
	a.PutStr("process.executable.name", p.Exe)
	a.PutStr("service.name", p.Service)
	if p.Cgroup != "" {
		a.PutStr("process.linux.cgroup", p.Cgroup)
	}
	if p.Container != "" {
		a.PutStr("container.id", p.Container)
	}
	if p.PodUID != "" {
		a.PutStr("k8s.pod.uid", p.PodUID)
	}
}

// dict fills a ProfilesDictionary, each table starting with its zero
// entry as the format wants, with maps from sonde's ids to table indices.
type dict struct {
	d      pprofile.ProfilesDictionary
	strs   map[string]int32
	funcs  map[string]int32 // name NUL file → function_table
	dsos   map[int32]int32  // model DSO → mapping_table
	locs   map[int32]int32  // model loc → location_table
	stacks map[int32]int32  // model stack → stack_table
}

func newDict(d pprofile.ProfilesDictionary) *dict {
	x := &dict{d: d, strs: map[string]int32{}, funcs: map[string]int32{}, dsos: map[int32]int32{}, locs: map[int32]int32{}, stacks: map[int32]int32{}}
	x.str("")
	d.MappingTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	return x
}

func (x *dict) str(s string) int32 {
	return index(x.strs, s, func() int32 {
		x.d.StringTable().Append(s)
		return int32(x.d.StringTable().Len() - 1)
	})
}

// index is m[k], adding the entry with add (which returns its table index)
// on first sight.
func index[K comparable](m map[K]int32, k K, add func() int32) int32 {
	if i, ok := m[k]; ok {
		return i
	}
	i := add()
	m[k] = i
	return i
}

func (x *dict) stack(p *model.Profile, id int32) int32 {
	return index(x.stacks, id, func() int32 {
		st := x.d.StackTable().AppendEmpty()
		for _, l := range p.Stacks[id] { // leaf first, as OTLP wants too
			st.LocationIndices().Append(x.loc(p, l))
		}
		return int32(x.d.StackTable().Len() - 1)
	})
}

func (x *dict) loc(p *model.Profile, id int32) int32 {
	return index(x.locs, id, func() int32 {
		l := p.Locs[id]
		loc := x.d.LocationTable().AppendEmpty()
		loc.SetAddress(l.Addr)
		if l.DSO >= 0 {
			loc.SetMappingIndex(x.mapping(p, l.DSO))
		}
		line := loc.Lines().AppendEmpty()
		line.SetFunctionIndex(x.function(p, l))
		if l.File >= 0 {
			line.SetLine(int64(l.Line))
		}
		return int32(x.d.LocationTable().Len() - 1)
	})
}

func (x *dict) function(p *model.Profile, l model.Loc) int32 {
	name, file := "[unknown]", ""
	switch {
	case l.Func >= 0:
		name = p.Funcs[l.Func].Name
		if l.File >= 0 && int(l.File) < len(p.Files) {
			file = p.Files[l.File]
		}
	case l.DSO >= 0: // no symbol: the frame is named by its object
		name = "[" + baseName(p.DSOs[l.DSO].Name) + "]"
	}
	return index(x.funcs, name+"\x00"+file, func() int32 {
		f := x.d.FunctionTable().AppendEmpty()
		f.SetNameStrindex(x.str(name))
		f.SetSystemNameStrindex(x.str(name))
		f.SetFilenameStrindex(x.str(file))
		return int32(x.d.FunctionTable().Len() - 1)
	})
}

func (x *dict) mapping(p *model.Profile, id int32) int32 {
	return index(x.dsos, id, func() int32 {
		dso := p.DSOs[id]
		m := x.d.MappingTable().AppendEmpty()
		m.SetFilenameStrindex(x.str(dso.Name))
		if dso.BuildID != "" {
			kv := x.d.AttributeTable().AppendEmpty()
			kv.SetKeyStrindex(x.str("process.executable.build_id.gnu"))
			kv.Value().SetStr(dso.BuildID)
			m.AttributeIndices().Append(int32(x.d.AttributeTable().Len() - 1))
		}
		return int32(x.d.MappingTable().Len() - 1)
	})
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}
