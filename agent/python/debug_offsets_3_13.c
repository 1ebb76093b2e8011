/* SPDX-License-Identifier: MIT */
/*
 * debug_offsets_3_13.c: the CPython 3.13 _Py_DebugOffsets layout (584 bytes):
 * where each entry sits in the table, plus the facts the table does not carry.
 * Positions come from CPython 3.13's Include/internal/pycore_runtime.h and were
 * checked against Debian's 3.13.15 build.
 */
#include "base/compat.h"

#include "python/pyabi.h"

const struct pyabi_schema pyabi_schema_3_13 = {
    .minor = 13,
    .table_size = 584,
    .pos =
        {
            [PYOFF_RUNTIME_SIZE] = 24,
            [PYOFF_RUNTIME_FINALIZING] = 32,
            [PYOFF_RUNTIME_INTERPRETERS_HEAD] = 40,
            [PYOFF_INTERP_SIZE] = 48,
            [PYOFF_INTERP_ID] = 56,
            [PYOFF_INTERP_NEXT] = 64,
            [PYOFF_INTERP_THREADS_HEAD] = 72,
            [PYOFF_INTERP_GC] = 80,
            [PYOFF_INTERP_GIL_LOCKED] = 136,
            [PYOFF_INTERP_GIL_HOLDER] = 144,
            [PYOFF_TSTATE_SIZE] = 152,
            [PYOFF_TSTATE_NEXT] = 168,
            [PYOFF_TSTATE_INTERP] = 176,
            [PYOFF_TSTATE_CURRENT_FRAME] = 184,
            [PYOFF_TSTATE_THREAD_ID] = 192,
            [PYOFF_TSTATE_NATIVE_THREAD_ID] = 200,
            [PYOFF_TSTATE_DATASTACK_CHUNK] = 208,
            [PYOFF_TSTATE_STATUS] = 216,
            [PYOFF_FRAME_SIZE] = 224,
            [PYOFF_FRAME_PREVIOUS] = 232,
            [PYOFF_FRAME_EXECUTABLE] = 240,
            [PYOFF_FRAME_INSTR_PTR] = 248,
            [PYOFF_FRAME_LOCALSPLUS] = 256,
            [PYOFF_FRAME_OWNER] = 264,
            [PYOFF_CODE_SIZE] = 272,
            [PYOFF_CODE_FILENAME] = 280,
            [PYOFF_CODE_NAME] = 288,
            [PYOFF_CODE_QUALNAME] = 296,
            [PYOFF_CODE_LINETABLE] = 304,
            [PYOFF_CODE_FIRSTLINENO] = 312,
            [PYOFF_CODE_ADAPTIVE] = 344,
            [PYOFF_BYTES_SIZE] = 512,
            [PYOFF_BYTES_OB_SIZE] = 520,
            [PYOFF_BYTES_OB_SVAL] = 528,
            [PYOFF_UNICODE_SIZE] = 536,
            [PYOFF_UNICODE_STATE] = 544,
            [PYOFF_UNICODE_LENGTH] = 552,
            [PYOFF_UNICODE_ASCII_SIZE] = 560,
            [PYOFF_GC_SIZE] = 568,
            [PYOFF_GC_COLLECTING] = 576,
        },
    /* Not in the 3.13 table (reference §10). */
    .threads_main_after_head = 8,
    .holds_gil_status_mask = 1u << 5,
    .current_exception = 112,
    .exc_state = 256,
    .compact_after_ascii = 16,
    .tag_mask = 0,
};
