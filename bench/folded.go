package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// The folded-stacks generator of the flame-graph case: n distinct stacks
// shaped like a busy host's profile, deterministic (the same n gives the
// same bytes on every run and machine), in an order no tool can exploit.
//
// Each stack is a walk down one random call tree. The stack's number x is
// read as a mixed-radix number: the first digit picks one of five
// processes (C, C++, Rust, Go, Python, each with its own startup frames and
// names), then every branching node of the tree consumes one digit as the
// index of the callee taken, and nodes that are plain calls (the caller
// always calls the same function, as most code does) consume none. The walk
// stops when no digit is left, so the tree part of a line decodes back to x:
// two numbers never give the same stack. Below it comes a short tail of leaf
// frames (allocator, memcpy, locks) and, for about a quarter of the stacks,
// kernel frames; tail names never occur in the tree, so the tail cannot
// blur where the tree part ends. Stacks are padded to at least 10 frames,
// and trees branch widely deep down, so none exceeds 60.
//
// Names are drawn from pools built from word lists: short C names, C++
// names with namespaces, templates and argument lists (up to ~250
// characters), Rust names with trait impls and hash suffixes, Go package
// paths, Python's interpreter frames repeated level after level. Every node
// hashes its path from the root, which decides whether it branches and how
// widely; a function's callees are consecutive pool entries chosen by its
// own name, so siblings never share a name, and a function calls the same
// few functions wherever it appears in the tree, as real code does.

type procKind struct {
	name    string
	startup []string
	pool    []string // distinct names, so siblings never share one
	chain   uint64   // per mille of tree nodes that are plain calls (no branching)
	calls   []string // names that recur as plain calls (an interpreter's loop)
}

// splitmix is a 64-bit mixer: the hash of a node from its parent's and the
// callee's index.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// pick returns the i-th combination of the lists, one word from each.
func pick(i uint64, lists ...[]string) []string {
	out := make([]string, len(lists))
	for k, l := range lists {
		out[k] = l[i%uint64(len(l))]
		i = i/uint64(len(l)) + splitmix(i)%7
	}
	return out
}

func cNames(n int) []string {
	pre := []string{"ngx_http", "ngx_event", "ssl3", "SSL", "tls13", "inflate", "deflate", "pcre2", "evp", "bio", "ngx_stream", "lua", "sqlite3", "xml", "redis", "zstd"}
	verb := []string{"read", "write", "process", "handle", "parse", "init", "finalize", "update", "lookup", "alloc", "free", "send", "recv", "dispatch", "flush", "compress"}
	noun := []string{"request_line", "headers", "body", "chunk", "record", "buffer", "block", "state", "table", "node", "frame", "conn", "upstream", "cache_entry", "ctx", "window"}
	out := make([]string, n)
	for i := range out {
		w := pick(uint64(i)*2654435761, pre, verb, noun)
		out[i] = w[0] + "_" + w[1] + "_" + w[2]
	}
	return out
}

func cppNames(n int) []string {
	ns := []string{"Envoy::Http", "Envoy::Network", "Envoy::Upstream", "absl::container_internal", "grpc_core", "google::protobuf::internal", "folly::detail", "boost::asio::detail", "v8::internal", "std"}
	class := []string{"ConnectionManagerImpl::ActiveStream", "FilterManager", "ClusterManagerImpl::ThreadLocalClusterManagerImpl", "raw_hash_set<absl::container_internal::FlatHashMapPolicy<std::string, int>, absl::hash_internal::Hash<std::string>, std::equal_to<std::string>, std::allocator<std::pair<std::string const, int> > >", "Subchannel", "WireFormatLite", "EventBase", "epoll_reactor", "Runtime_CompileLazy", "_Function_handler<void (), std::_Bind<void (net::Worker::*(net::Worker*))()> >", "vector<std::unique_ptr<Envoy::Http::StreamFilter, std::default_delete<Envoy::Http::StreamFilter> > >", "RequestHeaderMapImpl"}
	method := []string{"decodeHeaders", "encodeData", "onReadReady", "find", "resize", "_M_invoke", "run", "onData", "chooseHost", "ParseFromString", "InternalSerialize", "loopBody", "_M_realloc_insert", "iterate"}
	args := []string{"()", "(bool)", "(std::unique_ptr<Envoy::Http::RequestHeaderMap, std::default_delete<Envoy::Http::RequestHeaderMap> >&&, bool)", "(std::_Any_data const&)", "(Envoy::Buffer::Instance&, bool)", "(std::string const&) const", "(unsigned long)", "(google::protobuf::io::EpsCopyOutputStream*, unsigned char*) const", "(int, short, void*)", "(absl::string_view)"}
	out := make([]string, n)
	for i := range out {
		w := pick(uint64(i)*40503, ns, class, method, args)
		out[i] = w[0] + "::" + w[1] + "::" + w[2] + w[3]
	}
	return out
}

func rustNames(n int) []string {
	crate := []string{"tokio::runtime::task::harness", "tokio::runtime::scheduler::multi_thread::worker", "hyper::proto::h1::dispatch", "hyper::proto::h2::server", "tower::util::map_future", "serde_json::de", "regex_automata::meta::strategy", "alloc::collections::btree::map", "core::iter::adapters::map", "tracing::instrument", "std::sys::pal::unix::thread", "myservice::api::handlers"}
	typ := []string{"Harness<T,S>", "Dispatcher<D,Bs,I,T>", "Core", "Deserializer<R>", "Instrumented<T>", "Map<I,F>", "BTreeMap<K,V,A>", "Server<T,S,B,E>", "Context", "Pre<P>", "Thread", "Handler"}
	method := []string{"poll", "poll_inner", "run_task", "parse_value", "search_slots", "insert", "next", "try_fold", "call", "poll_catch", "{{closure}}", "deserialize_map"}
	out := make([]string, n)
	for i := range out {
		w := pick(uint64(i)*69069, crate, typ, method)
		h := splitmix(uint64(i) + 99)
		name := w[0] + "::" + w[1] + "::" + w[2]
		if h%3 == 0 {
			name = "<" + w[0] + "::" + w[1] + " as core::future::future::Future>::" + w[2]
		}
		out[i] = name + "::h" + strconv.FormatUint(h|1<<63, 16)
	}
	return out
}

func goNames(n int) []string {
	pkg := []string{"net/http", "runtime", "encoding/json", "google.golang.org/grpc", "google.golang.org/grpc/internal/transport", "github.com/example/api/internal/store", "database/sql", "compress/gzip", "crypto/tls", "bufio"}
	recv := []string{"(*conn)", "(*Server)", "(*decodeState)", "(*http2Server)", "(*Store)", "(*DB)", "(*Reader)", "(*Conn)", "(*serverHandlerImpl)", ""}
	fn := []string{"serve", "ServeHTTP", "object", "operateHeaders", "Get", "QueryContext", "Read", "readRecord", "handleStream", "growslice", "func1", "processUnaryRPC"}
	out := make([]string, n)
	for i := range out {
		w := pick(uint64(i)*2246822519, pkg, recv, fn)
		if w[1] == "" {
			out[i] = w[0] + "." + w[2]
		} else {
			out[i] = w[0] + "." + w[1] + "." + w[2]
		}
	}
	return out
}

// pyEval are the interpreter's own frames, recurring at every level of a
// Python stack.
var pyEval = []string{"_PyEval_EvalFrameDefault", "_PyFunction_Vectorcall", "PyObject_Vectorcall", "method_vectorcall_FASTCALL_KEYWORDS", "_PyObject_MakeTpCall"}

func pyNames(n int) []string {
	mod := []string{"django/core/handlers/base.py", "django/db/models/query.py", "json/decoder.py", "re/_parser.py", "app/views.py", "app/serializers.py", "sqlalchemy/orm/session.py"}
	fn := []string{"get_response", "_fetch_all", "raw_decode", "_parse", "list", "to_representation", "execute", "__iter__"}
	out := make([]string, n)
	for i := range out {
		w := pick(uint64(i)*97, mod, fn)
		out[i] = w[1] + " (" + w[0] + ":" + strconv.Itoa(10+i%900) + ")"
	}
	return out
}

// distinct drops repeated names, keeping the first of each.
func distinct(names []string) []string {
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// tailNames are leaf frames: never a node of the tree (see above).
var tailNames = []string{"malloc", "_int_malloc", "free", "_int_free", "__memmove_avx_unaligned_erms", "__memset_avx2_unaligned_erms", "pthread_mutex_lock", "__lll_lock_wait", "pthread_cond_wait@@GLIBC_2.3.2", "operator new(unsigned long)", "operator delete(void*, unsigned long)", "__strlen_avx2", "__GI___libc_write", "__libc_recv", "epoll_wait", "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)", "alloc::raw_vec::RawVec<T,A>::reserve::do_reserve_and_handle::h5b1f0c3e8d2a7946", "runtime.memmove", "runtime.mallocgc", "PyObject_Malloc", "_PyObject_GC_Link", "__GI___clock_gettime", "__vdso_clock_gettime"}

var kernelNames = []string{"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_read", "__x64_sys_write", "__x64_sys_futex", "__x64_sys_epoll_wait", "ksys_read", "ksys_write", "vfs_read", "vfs_write", "sock_read_iter", "sock_write_iter", "tcp_recvmsg", "tcp_sendmsg", "tcp_sendmsg_locked", "tcp_push", "__tcp_transmit_skb", "ip_queue_xmit", "__dev_queue_xmit", "futex_wait", "futex_wake", "do_epoll_wait", "schedule", "__schedule", "finish_task_switch.isra.0", "asm_exc_page_fault", "exc_page_fault", "do_user_addr_fault", "handle_mm_fault", "__handle_mm_fault", "do_anonymous_page", "clear_page_erms", "copy_user_enhanced_fast_string", "_copy_to_iter", "skb_copy_datagram_iter", "asm_sysvec_apic_timer_interrupt", "hrtimer_interrupt", "__sysvec_apic_timer_interrupt"}

func procKinds() []procKind {
	return []procKind{
		{"nginx", []string{"_start", "__libc_start_main_impl", "__libc_start_call_main", "main", "ngx_master_process_cycle", "ngx_start_worker_processes", "ngx_spawn_process", "ngx_worker_process_cycle", "ngx_process_events_and_timers"}, distinct(cNames(1500)), 350, nil},
		{"envoy", []string{"start_thread", "Envoy::Thread::ThreadImplPosix::ThreadImplPosix(std::function<void ()>, absl::optional<Envoy::Thread::Options> const&)::$_0::__invoke(void*)", "Envoy::Server::WorkerImpl::threadRoutine(Envoy::Server::GuardDog&, std::function<void ()> const&)", "Envoy::Event::DispatcherImpl::run(Envoy::Event::Dispatcher::RunType)", "event_base_loop"}, distinct(cppNames(3000)), 600, nil},
		{"rustsvc", []string{"_start", "__libc_start_main_impl", "main", "std::rt::lang_start_internal::h9f8e7d6c5b4a3f21", "std::rt::lang_start::{{closure}}::h0a1b2c3d4e5f6a7b", "myservice::main::h1122334455667788", "tokio::runtime::runtime::Runtime::block_on::h8877665544332211"}, distinct(rustNames(3000)), 700, nil},
		{"gosvc", []string{"runtime.goexit", "net/http.(*conn).serve", "net/http.serverHandler.ServeHTTP", "net/http.(*ServeMux).ServeHTTP", "net/http.HandlerFunc.ServeHTTP"}, distinct(goNames(1200)), 500, nil},
		{"python3.11", []string{"_start", "__libc_start_main_impl", "Py_BytesMain", "Py_RunMain", "pymain_run_python", "_PyRun_AnyFileObject", "_PyRun_SimpleFileObject", "run_mod", "run_eval_code_obj", "PyEval_EvalCode"}, distinct(pyNames(900)), 600, pyEval},
	}
}

// stackGen writes the stacks. It keeps one line buffer, so generating a
// million stacks allocates next to nothing.
type stackGen struct {
	kinds []procKind
	tails []string // not nil: the second shape, see tailStack
	line  []byte
	depth int
}

func newStackGen(tails bool) *stackGen {
	g := &stackGen{kinds: procKinds()}
	if tails {
		for i := 0; i < 2000; i++ {
			g.tails = append(g.tails, "fn_"+strconv.Itoa(i))
		}
	}
	return g
}

// tailStack is the second shape: stacks that share only their top
// (process, startup, one of 50 handlers), then run 5 to 30 frames of their
// own, drawn at random from 2,000 short names: many distinct call paths
// through a small code base, nearly every frame below the eighth a new node
// of the tree (17 M in all for a million stacks), as in the profile
// FlameGraph and inferno are most often fed. The two frames after the
// handler spell the stack's number, so stacks stay distinct up to 4 M.
func (g *stackGen) tailStack(x uint64) uint64 {
	g.line, g.depth = g.line[:0], 0
	g.frame("app" + strconv.FormatUint(x/7%4, 10))
	for _, f := range []string{"_start", "__libc_start_main", "main", "run_loop", "dispatch"} {
		g.frame(f)
	}
	g.frame("handle_" + strconv.FormatUint(x/13%50, 10))
	L := uint64(len(g.tails))
	g.frame(g.tails[x%L])
	g.frame(g.tails[x/L%L])
	h := splitmix(x + 77)
	for i, n := uint64(0), 5+h%26; i < n; i++ {
		h = splitmix(h)
		g.frame(g.tails[h%L])
	}
	return h
}

func (g *stackGen) frame(name string) {
	if g.depth > 0 {
		g.line = append(g.line, ';')
	}
	g.line = append(g.line, name...)
	g.depth++
}

// stack builds stack number x as one folded line (without its count) and
// returns the hash of its deepest tree node, which also picks the count.
func (g *stackGen) stack(x uint64) uint64 {
	if g.tails != nil {
		return g.tailStack(x)
	}
	g.line, g.depth = g.line[:0], 0
	k := g.kinds[x%uint64(len(g.kinds))]
	q := x / uint64(len(g.kinds))
	g.frame(k.name)
	for _, s := range k.startup {
		g.frame(s)
	}
	h := splitmix(x%uint64(len(g.kinds)) + 1)
	L := uint64(len(k.pool))
	caller := L // the startup's last frame
	for q > 0 {
		r := splitmix(h)
		var fan uint64 = 1
		switch {
		case g.depth >= 40:
			fan = 64 // deep down, branch fast so no stack passes 60
		case r%1000 >= k.chain:
			fan = 2 + r>>10%11
		}
		child := q % fan
		q /= fan
		if fan == 1 && len(k.calls) > 0 && r>>30%2 == 0 {
			// The interpreter's loop calls whatever the script calls.
			g.frame(k.calls[r>>31%uint64(len(k.calls))])
			caller = r >> 40 % L
		} else {
			caller = (splitmix(caller)%L + child) % L
			g.frame(k.pool[caller])
		}
		h = splitmix(h ^ (child+1)*0x9e3779b97f4a7c15)
	}
	// The tail is a function of the tree part, so the line stays distinct.
	t := splitmix(h ^ 0x5151)
	for i := uint64(0); i < t%4 || g.depth < 10; i++ {
		g.frame(tailNames[(t>>8+i*7)%uint64(len(tailNames))])
	}
	if t>>40%4 == 0 {
		for i, n := uint64(0), 3+t>>44%6; i < n; i++ {
			g.frame(kernelNames[(t>>16+i*5)%uint64(len(kernelNames))] + "_[k]")
		}
	}
	return h
}

// writeFoldedStacks writes n distinct stacks to path in a permuted order,
// with counts as a profile has them: mostly 1, some tens, a few thousands;
// tails picks the second shape (tailStack). It returns the lines, bytes
// and deepest stack written.
func writeFoldedStacks(path string, n int, tails bool) (lines int, size int64, maxDepth int, meanDepth float64) {
	f, err := os.Create(path)
	if err != nil {
		fail(err.Error())
	}
	w := bufio.NewWriterSize(f, 1<<20)
	// i → (a·i + c) mod n visits every number once when gcd(a, n) = 1.
	a := 7919
	for gcd(a, n) != 1 {
		a++
	}
	g := newStackGen(tails)
	var depths int
	for i := 0; i < n; i++ {
		x := uint64((a*i + 12345) % n)
		h := splitmix(g.stack(x))
		count := 1 + h%3
		switch {
		case h>>8%100 < 2:
			count = 100 + h>>16%5000
		case h>>8%100 < 20:
			count = 4 + h>>16%60
		}
		g.line = append(g.line, ' ')
		g.line = strconv.AppendUint(g.line, count, 10)
		g.line = append(g.line, '\n')
		w.Write(g.line)
		size += int64(len(g.line))
		lines++
		depths += g.depth
		maxDepth = max(maxDepth, g.depth)
	}
	if err := w.Flush(); err != nil {
		fail("writing stacks: " + err.Error())
	}
	if err := f.Close(); err != nil {
		fail("writing stacks: " + err.Error())
	}
	return lines, size, maxDepth, float64(depths) / float64(n)
}

// foldedLine is stack x's line without its count, for tests.
func foldedLine(g *stackGen, x uint64) string {
	g.stack(x)
	return strings.Clone(string(g.line))
}
