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
#include "python/pyasync.h"

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
            [PYOFF_INTERP_TLBC_GENERATION] = 168,
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
            [PYOFF_FRAME_TLBC_INDEX] = 368,
            [PYOFF_CODE_SIZE] = 376,
            [PYOFF_CODE_FILENAME] = 384,
            [PYOFF_CODE_NAME] = 392,
            [PYOFF_CODE_QUALNAME] = 400,
            [PYOFF_CODE_LINETABLE] = 408,
            [PYOFF_CODE_FIRSTLINENO] = 416,
            [PYOFF_CODE_ADAPTIVE] = 448,
            [PYOFF_CODE_TLBC] = 456,
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
    .ft_str_state_shift = PYABI_STR_FT_SHIFT,
};

/* Async-aware stacks: positions in the main table above and in the 104-byte
 * _Py_AsyncioModuleDebugOffsets table (.AsyncioDebug), plus the generator
 * frame states and the await slot, which no table carries (reference §9). */
const struct pyasync_schema pyasync_schema_3_15 = {
    .minor = 15,
    .pos =
        {
            [PYAIO_FRAME_STACKPOINTER] = 360,
            [PYAIO_PYOBJ_SIZE] = 464,
            [PYAIO_PYOBJ_OB_TYPE] = 472,
            [PYAIO_TYPE_SIZE] = 480,
            [PYAIO_TYPE_TP_FLAGS] = 504,
            [PYAIO_SET_SIZE] = 592,
            [PYAIO_SET_USED] = 600,
            [PYAIO_SET_TABLE] = 608,
            [PYAIO_SET_MASK] = 616,
            [PYAIO_LONG_SIZE] = 664,
            [PYAIO_LONG_LV_TAG] = 672,
            [PYAIO_LONG_OB_DIGIT] = 680,
            [PYAIO_GEN_SIZE] = 792,
            [PYAIO_GEN_IFRAME] = 808,
            [PYAIO_GEN_FRAME_STATE] = 816,
            [PYAIO_LLIST_NEXT] = 824,
            [PYAIO_TASK_SIZE] = 0,
            [PYAIO_TASK_NAME] = 8,
            [PYAIO_TASK_AWAITED_BY] = 16,
            [PYAIO_TASK_IS_TASK] = 24,
            [PYAIO_TASK_AWAITED_BY_IS_SET] = 32,
            [PYAIO_TASK_CORO] = 40,
            [PYAIO_TASK_NODE] = 48,
            [PYAIO_INTERP_SIZE] = 56,
            [PYAIO_INTERP_TASKS_HEAD] = 64,
            [PYAIO_TSTATE_SIZE] = 72,
            [PYAIO_TSTATE_RUNNING_LOOP] = 80,
            [PYAIO_TSTATE_RUNNING_TASK] = 88,
            [PYAIO_TSTATE_TASKS_HEAD] = 96,
        },
    .fs_created = 0,
    .fs_suspended = 1,
    .fs_yield_from = 2,
    .fs_yield_from_locked = 3,
    .fs_executing = 4,
    .fs_completed = 5, /* none in 3.15: cleared */
    .fs_cleared = 5,
    .await_below_sp = 16, /* stackpointer[-2]; [-1] holds a null stack ref */
};
