# sonde: see README.md. `make run` shows what sonde does; `make test` checks it.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
OUT      := out
BIN      := $(OUT)/sonde
export CGO_ENABLED := 0

.PHONY: all build run test unit fuzz cross generate bench man clean

all: build

build:
	@mkdir -p $(OUT)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/sonde

# Profile the bundled example (testdata/work.c: two functions splitting work
# 3:1), print the report and write a flame graph.
run: build
	@mkdir -p $(OUT)
	gcc -O1 -g -fno-omit-frame-pointer -o $(OUT)/work testdata/work.c
	$(BIN) record -g -o $(OUT)/work.data -- $(OUT)/work 600
	$(BIN) report -i $(OUT)/work.data --no-children --percent-limit 1
	$(BIN) flamegraph -i $(OUT)/work.data -o $(OUT)/flame.html --title "sonde: testdata/work.c"
	@echo "flame graph: $(abspath $(OUT)/flame.html) (open it in a browser)"

# Everything. Packages run one at a time (-p 1): recordings and system-wide
# tests must not measure each other on a 2-core machine.
test: unit fuzz

unit:
	$(GO) vet ./...
	GOARCH=arm64 $(GO) build ./...
	GOARCH=arm GOARM=7 $(GO) build ./...
	$(GO) test -p 1 -count=1 -timeout 30m ./...

# A short fuzzing run of the data-file reader on top of its checked-in corpus
# (testdata/fuzz), gzip layer and section decoder separately, and of the
# readers of perf's files (perf.data, perf script text), of what an agent
# sends to `sonde --remote`, and of the table cache's entries.
# (Minimizing is capped: on these VMs it dominates a short run.)
# Budgets are counts of executions (about 10 s each here), not durations:
# a duration's deadline can race a worker still running and fail the run
# with "context deadline exceeded" and no input (golang/go#75804, fixed in
# Go 1.27; it failed CI run 11 on FuzzUnmarshalTable).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime 300000x -fuzzminimizetime 100x ./internal/format/datafile
	$(GO) test -run '^$$' -fuzz '^FuzzSections$$' -fuzztime 250000x -fuzzminimizetime 100x ./internal/format/datafile
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime 300000x -fuzzminimizetime 100x ./internal/format/perfdata
	$(GO) test -run '^$$' -fuzz '^FuzzParseScript$$' -fuzztime 200000x -fuzzminimizetime 100x ./internal/format/perfdata
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime 30000x -fuzzminimizetime 100x ./internal/cmd/remote
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshalTable$$' -fuzztime 300000x -fuzzminimizetime 100x ./internal/collect/unwindtable
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 300000x -fuzzminimizetime 100x ./internal/collect/diskcache

cross:
	@mkdir -p $(OUT)
	GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/sonde-linux-amd64 ./cmd/sonde
	GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/sonde-linux-arm64 ./cmd/sonde
	GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT)/sonde-linux-arm ./cmd/sonde
	@file $(OUT)/sonde-linux-* 2>/dev/null || ls -l $(OUT)/sonde-linux-*

# Regenerate the BPF objects and their Go bindings (needs clang, libbpf-dev).
generate:
	$(GO) generate ./...

# A man page per command (sonde.1, sonde-record.1, …), generated from the
# same definitions the command line parses with.
man: build
	$(BIN) man -o $(OUT)/man
	@ls $(OUT)/man | wc -l | xargs echo "man pages in $(OUT)/man:"

# Side by side with perf (Debian's linux-perf): see bench/README.md.
bench: build
	$(GO) run ./bench -sonde $(abspath $(BIN))

clean:
	rm -rf $(OUT)
