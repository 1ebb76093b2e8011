/* SPDX-License-Identifier: MIT */
/*
 * debug_offsets_3_14.c: the CPython 3.14 _Py_DebugOffsets layout (760 bytes),
 * from Include/internal/pycore_debug_offsets.h of 3.14, checked against
 * Debian's 3.14.8 build; plus the facts the table does not carry.
 */
#include "base/compat.h"

#include "python/pyabi.h"
#include "python/pyasync.h"

const struct pyabi_schema pyabi_schema_3_14 = {
    .minor = 14,
    .table_size = 760,
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
            [PYOFF_TSTATE_THREAD_ID] = 216,
            [PYOFF_TSTATE_NATIVE_THREAD_ID] = 224,
            [PYOFF_TSTATE_DATASTACK_CHUNK] = 232,
            [PYOFF_TSTATE_STATUS] = 240,
            [PYOFF_FRAME_SIZE] = 248,
            [PYOFF_FRAME_PREVIOUS] = 256,
            [PYOFF_FRAME_EXECUTABLE] = 264,
            [PYOFF_FRAME_INSTR_PTR] = 272,
            [PYOFF_FRAME_LOCALSPLUS] = 280,
            [PYOFF_FRAME_OWNER] = 288,
            [PYOFF_FRAME_TLBC_INDEX] = 304,
            [PYOFF_CODE_SIZE] = 312,
            [PYOFF_CODE_FILENAME] = 320,
            [PYOFF_CODE_NAME] = 328,
            [PYOFF_CODE_QUALNAME] = 336,
            [PYOFF_CODE_LINETABLE] = 344,
            [PYOFF_CODE_FIRSTLINENO] = 352,
            [PYOFF_CODE_ADAPTIVE] = 384,
            [PYOFF_CODE_TLBC] = 392,
            [PYOFF_BYTES_SIZE] = 592,
            [PYOFF_BYTES_OB_SIZE] = 600,
            [PYOFF_BYTES_OB_SVAL] = 608,
            [PYOFF_UNICODE_SIZE] = 616,
            [PYOFF_UNICODE_STATE] = 624,
            [PYOFF_UNICODE_LENGTH] = 632,
            [PYOFF_UNICODE_ASCII_SIZE] = 640,
            [PYOFF_GC_SIZE] = 648,
            [PYOFF_GC_COLLECTING] = 656,
        },
    /* Not in the 3.14 table (reference §10). */
    .holds_gil_int = 36,
    .current_exception = 112,
    .exc_state = 256,
    .compact_after_ascii = 16,
    .tag_mask = 3,
    .ft_str_state_shift = PYABI_STR_FT_SHIFT,
};

/* Async-aware stacks: positions in the main table above and in the 104-byte
 * _Py_AsyncioModuleDebugOffsets table (.AsyncioDebug), plus the generator
 * frame states and the await slot, which no table carries (reference §9). */
const struct pyasync_schema pyasync_schema_3_14 = {
    .minor = 14,
    .pos =
        {
            [PYAIO_FRAME_STACKPOINTER] = 296,
            [PYAIO_PYOBJ_SIZE] = 400,
            [PYAIO_PYOBJ_OB_TYPE] = 408,
            [PYAIO_TYPE_SIZE] = 416,
            [PYAIO_TYPE_TP_FLAGS] = 440,
            [PYAIO_SET_SIZE] = 496,
            [PYAIO_SET_USED] = 504,
            [PYAIO_SET_TABLE] = 512,
            [PYAIO_SET_MASK] = 520,
            [PYAIO_LONG_SIZE] = 568,
            [PYAIO_LONG_LV_TAG] = 576,
            [PYAIO_LONG_OB_DIGIT] = 584,
            [PYAIO_GEN_SIZE] = 664,
            [PYAIO_GEN_IFRAME] = 680,
            [PYAIO_GEN_FRAME_STATE] = 688,
            [PYAIO_LLIST_NEXT] = 696,
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
    .fs_created = -3,
    .fs_suspended = -2,
    .fs_yield_from = -1,
    .fs_yield_from_locked = -1, /* no such state before 3.15 */
    .fs_executing = 0,
    .fs_completed = 1,
    .fs_cleared = 4,
    .await_below_sp = 8, /* stackpointer[-1] */
};
