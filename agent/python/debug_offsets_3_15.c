/* SPDX-License-Identifier: MIT */
/*
 * debug_offsets_3_15.c: the CPython 3.15 _Py_DebugOffsets layout (888 bytes),
 * from Include/internal/pycore_debug_offsets.h of 3.15.0, checked against
 * Debian's 3.15.0 build. 3.15 puts nearly everything the unwinder needs in
 * the table, including the base frame, GIL flags, exception fields and the
 * frame that started a garbage collection.
 */
#include "base/compat.h"

#include "python/pyabi.h"

const struct pyabi_schema pyabi_schema_3_15 = {
    .minor = 15,
    .table_size = 888,
    .pos =
        {
            [PYOFF_RUNTIME_SIZE] = 24,
            [PYOFF_RUNTIME_FINALIZING] = 32,
            [PYOFF_RUNTIME_INTERPRETERS_HEAD] = 40,
            [PYOFF_INTERP_SIZE] = 48,
            [PYOFF_INTERP_ID] = 56,
            [PYOFF_INTERP_NEXT] = 64,
            [PYOFF_INTERP_THREADS_HEAD] = 72,
            [PYOFF_INTERP_THREADS_MAIN] = 80,
            [PYOFF_INTERP_GC] = 88,
            [PYOFF_INTERP_GIL_LOCKED] = 144,
            [PYOFF_INTERP_GIL_HOLDER] = 152,
            [PYOFF_INTERP_CODE_GENERATION] = 160,
            [PYOFF_TSTATE_SIZE] = 176,
            [PYOFF_TSTATE_NEXT] = 192,
            [PYOFF_TSTATE_INTERP] = 200,
            [PYOFF_TSTATE_CURRENT_FRAME] = 208,
            [PYOFF_TSTATE_BASE_FRAME] = 216,
            [PYOFF_TSTATE_THREAD_ID] = 240,
            [PYOFF_TSTATE_NATIVE_THREAD_ID] = 248,
            [PYOFF_TSTATE_DATASTACK_CHUNK] = 256,
            [PYOFF_TSTATE_STATUS] = 264,
            [PYOFF_TSTATE_HOLDS_GIL] = 272,
            [PYOFF_TSTATE_GIL_REQUESTED] = 280,
            [PYOFF_TSTATE_CURRENT_EXCEPTION] = 288,
            [PYOFF_TSTATE_EXC_STATE] = 296,
            [PYOFF_ERR_STACKITEM_EXC_VALUE] = 304,
            [PYOFF_FRAME_SIZE] = 312,
            [PYOFF_FRAME_PREVIOUS] = 320,
            [PYOFF_FRAME_EXECUTABLE] = 328,
            [PYOFF_FRAME_INSTR_PTR] = 336,
            [PYOFF_FRAME_LOCALSPLUS] = 344,
            [PYOFF_FRAME_OWNER] = 352,
            [PYOFF_CODE_SIZE] = 376,
            [PYOFF_CODE_FILENAME] = 384,
            [PYOFF_CODE_NAME] = 392,
            [PYOFF_CODE_QUALNAME] = 400,
            [PYOFF_CODE_LINETABLE] = 408,
            [PYOFF_CODE_FIRSTLINENO] = 416,
            [PYOFF_CODE_ADAPTIVE] = 448,
            [PYOFF_BYTES_SIZE] = 688,
            [PYOFF_BYTES_OB_SIZE] = 696,
            [PYOFF_BYTES_OB_SVAL] = 704,
            [PYOFF_UNICODE_SIZE] = 712,
            [PYOFF_UNICODE_STATE] = 720,
            [PYOFF_UNICODE_LENGTH] = 728,
            [PYOFF_UNICODE_ASCII_SIZE] = 736,
            [PYOFF_UNICODE_COMPACT_SIZE] = 744,
            [PYOFF_GC_SIZE] = 752,
            [PYOFF_GC_COLLECTING] = 760,
            [PYOFF_GC_FRAME] = 768,
        },
    .tag_mask = 3,
};
