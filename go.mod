module github.com/sonde-dev/sonde

go 1.26.8

require (
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	golang.org/x/sys v0.49.0
)

require github.com/cilium/ebpf v0.22.0

tool github.com/cilium/ebpf/cmd/bpf2go
