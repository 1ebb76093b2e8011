/* SPDX-License-Identifier: MIT */
/*
 * scripts/pylayouts/probe.c: compiled by scripts/gen-pylayouts.sh against one
 * CPython version's own headers (with Py_BUILD_CORE, for the internal
 * structures), prints that version's layout as entries of
 * agent/python/layouts_generated.c: for each entry of
 * agent/python/debug_offsets.def the version has, the offset or size its
 * headers give. Nothing here runs in pyprofd; it is a build tool.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>

#include <internal/pycore_interp.h>
#include <internal/pycore_pystate.h>
#include <internal/pycore_runtime.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#endif

#define E(name, value)          printf("            [PYOFF_%s] = {true, %zu},\n", #name, (size_t)(value))
#define OFF(name, type, member) E(name, offsetof(type, member))

int main(void)
{
    printf("    .minor = %d,\n", PY_MINOR_VERSION);
    printf("    .source = \"CPython %s headers%s\",\n", PY_VERSION,
#ifdef Py_DEBUG
           ", Py_DEBUG"
#else
           ""
#endif
    );
    printf("    .e =\n        {\n");
    E(RUNTIME_SIZE, sizeof(_PyRuntimeState));
    OFF(RUNTIME_FINALIZING, _PyRuntimeState, _finalizing);
    OFF(RUNTIME_INTERPRETERS_HEAD, _PyRuntimeState, interpreters.head);
#if PY_MINOR_VERSION <= 11
    OFF(RUNTIME_GIL_LOCKED, _PyRuntimeState, ceval.gil.locked);
    OFF(RUNTIME_GIL_HOLDER, _PyRuntimeState, ceval.gil.last_holder);
#endif

    E(INTERP_SIZE, sizeof(PyInterpreterState));
    OFF(INTERP_ID, PyInterpreterState, id);
    OFF(INTERP_NEXT, PyInterpreterState, next);
#if PY_MINOR_VERSION <= 10
    OFF(INTERP_THREADS_HEAD, PyInterpreterState, tstate_head);
#else
    OFF(INTERP_THREADS_HEAD, PyInterpreterState, threads.head);
#endif
    OFF(INTERP_GC, PyInterpreterState, gc);
#if PY_MINOR_VERSION >= 12
    OFF(INTERP_GIL_LOCKED, PyInterpreterState, _gil.locked);
    OFF(INTERP_GIL_HOLDER, PyInterpreterState, _gil.last_holder);
#endif

    E(TSTATE_SIZE, sizeof(PyThreadState));
    OFF(TSTATE_NEXT, PyThreadState, next);
    OFF(TSTATE_INTERP, PyThreadState, interp);
    OFF(TSTATE_THREAD_ID, PyThreadState, thread_id);
#if PY_MINOR_VERSION >= 11
    OFF(TSTATE_NATIVE_THREAD_ID, PyThreadState, native_thread_id);
    OFF(TSTATE_DATASTACK_CHUNK, PyThreadState, datastack_chunk);
    OFF(TSTATE_CFRAME, PyThreadState, cframe);
    OFF(CFRAME_CURRENT_FRAME, _PyCFrame, current_frame);
#else
    OFF(TSTATE_FRAME, PyThreadState, frame);
#endif
#if PY_MINOR_VERSION >= 12
    OFF(TSTATE_CURRENT_EXCEPTION, PyThreadState, current_exception);
#else
    OFF(TSTATE_CURRENT_EXCEPTION, PyThreadState, curexc_type);
#endif
    OFF(TSTATE_EXC_INFO, PyThreadState, exc_info);
    OFF(TSTATE_EXC_STATE, PyThreadState, exc_state);
    OFF(ERR_STACKITEM_EXC_VALUE, _PyErr_StackItem, exc_value);

#if PY_MINOR_VERSION >= 11
    E(FRAME_SIZE, sizeof(_PyInterpreterFrame));
    OFF(FRAME_PREVIOUS, _PyInterpreterFrame, previous);
    OFF(FRAME_EXECUTABLE, _PyInterpreterFrame, f_code);
    OFF(FRAME_INSTR_PTR, _PyInterpreterFrame, prev_instr);
    OFF(FRAME_LOCALSPLUS, _PyInterpreterFrame, localsplus);
    OFF(FRAME_OWNER, _PyInterpreterFrame, owner);
#endif
#if PY_MINOR_VERSION == 11
    OFF(FRAME_IS_ENTRY, _PyInterpreterFrame, is_entry);
#endif
#if PY_MINOR_VERSION <= 10
    E(FRAMEOBJ_SIZE, sizeof(PyFrameObject));
    OFF(FRAMEOBJ_BACK, PyFrameObject, f_back);
    OFF(FRAMEOBJ_CODE, PyFrameObject, f_code);
    OFF(FRAMEOBJ_LASTI, PyFrameObject, f_lasti);
#endif
#if PY_MINOR_VERSION == 9
    OFF(FRAMEOBJ_STATE, PyFrameObject, f_executing);
#elif PY_MINOR_VERSION == 10
    OFF(FRAMEOBJ_STATE, PyFrameObject, f_state);
#endif

    E(CODE_SIZE, sizeof(PyCodeObject));
    OFF(CODE_FILENAME, PyCodeObject, co_filename);
    OFF(CODE_NAME, PyCodeObject, co_name);
#if PY_MINOR_VERSION >= 11
    OFF(CODE_QUALNAME, PyCodeObject, co_qualname);
    OFF(CODE_ADAPTIVE, PyCodeObject, co_code_adaptive);
#else
    OFF(CODE_CODE, PyCodeObject, co_code);
#endif
#if PY_MINOR_VERSION <= 9
    OFF(CODE_LINETABLE, PyCodeObject, co_lnotab);
#else
    OFF(CODE_LINETABLE, PyCodeObject, co_linetable);
#endif
    OFF(CODE_FIRSTLINENO, PyCodeObject, co_firstlineno);

    E(BYTES_SIZE, sizeof(PyBytesObject));
    OFF(BYTES_OB_SIZE, PyBytesObject, ob_base.ob_size);
    OFF(BYTES_OB_SVAL, PyBytesObject, ob_sval);
    E(UNICODE_SIZE, sizeof(PyUnicodeObject));
    OFF(UNICODE_STATE, PyASCIIObject, state);
    OFF(UNICODE_LENGTH, PyASCIIObject, length);
    E(UNICODE_ASCII_SIZE, sizeof(PyASCIIObject));
    E(UNICODE_COMPACT_SIZE, sizeof(PyCompactUnicodeObject));
    E(GC_SIZE, sizeof(struct _gc_runtime_state));
    OFF(GC_COLLECTING, struct _gc_runtime_state, collecting);
    OFF(OBJECT_TYPE, PyObject, ob_type);
    printf("        },\n");
    printf("    .compact_after_ascii = %zu,\n",
           sizeof(PyCompactUnicodeObject) - sizeof(PyASCIIObject));
    return 0;
}
