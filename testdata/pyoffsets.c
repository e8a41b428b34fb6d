/* Prints the CPython layout sonde's Python walker reads, from the headers
 * of the version it is compiled against (internal/collect/python's table
 * is checked against this by TestOffsetsMatchHeaders):
 *   gcc -DPy_BUILD_CORE -I$PREFIX/include/python3.X -I$PREFIX/include/python3.X/internal pyoffsets.c
 * One "name value" line each. */
#include <stddef.h>
#include <stdio.h>
#include "Python.h"
#include "frameobject.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_MINOR_VERSION >= 11
#include "internal/pycore_frame.h"
#endif

#define P(name, v) printf("%s %zu\n", name, (size_t)(v))

int main(void)
{
	P("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_MINOR_VERSION >= 11
	P("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#else
	P("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
	P("tstate_next", offsetof(PyThreadState, next));
#if PY_MINOR_VERSION >= 11
	P("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#else
	P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#endif
#if PY_MINOR_VERSION >= 13
	P("tstate_frame", offsetof(PyThreadState, current_frame));
#elif PY_MINOR_VERSION >= 11
	P("tstate_frame", offsetof(PyThreadState, cframe));
	P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
	P("tstate_frame", offsetof(PyThreadState, frame));
#endif
#if PY_MINOR_VERSION >= 11
	P("frame_previous", offsetof(struct _PyInterpreterFrame, previous));
#if PY_MINOR_VERSION >= 13
	P("frame_code", offsetof(struct _PyInterpreterFrame, f_executable));
	P("frame_instr", offsetof(struct _PyInterpreterFrame, instr_ptr));
#else
	P("frame_code", offsetof(struct _PyInterpreterFrame, f_code));
	P("frame_instr", offsetof(struct _PyInterpreterFrame, prev_instr));
#endif
	P("frame_owner", offsetof(struct _PyInterpreterFrame, owner));
#if PY_MINOR_VERSION == 11
	P("frame_is_entry", offsetof(struct _PyInterpreterFrame, is_entry));
#endif
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
#else
	P("frame_previous", offsetof(PyFrameObject, f_back));
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_instr", offsetof(PyFrameObject, f_lasti));
#endif
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_name", offsetof(PyCodeObject, co_name));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
	P("bytes_size", offsetof(PyVarObject, ob_size));
	P("bytes_data", offsetof(PyBytesObject, ob_sval));
	P("unicode_state", offsetof(PyASCIIObject, state));
	P("unicode_length", offsetof(PyASCIIObject, length));
	P("unicode_ascii_size", sizeof(PyASCIIObject));
	P("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	P("object_type", offsetof(PyObject, ob_type));
	return 0;
}
