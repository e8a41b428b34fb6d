package python

import "runtime"

// pthreadIsThreadPointer says whether pthread_self is the thread pointer
// the kernel keeps (x86-64's fsbase, which the walker reads): 3.10's
// thread states name their thread only by pthread_self.
func pthreadIsThreadPointer() bool { return runtime.GOARCH == "amd64" }
