/* SPDX-License-Identifier: MIT */
/*
 * pyasync.h: the asyncio half of CPython's ABI as data. CPython 3.14 and 3.15
 * publish a second debug table, _Py_AsyncioModuleDebugOffsets (section
 * .AsyncioDebug of the _asyncio extension module, or of the executable when
 * _asyncio is built in), with the offsets of asyncio's task object and of the
 * task lists and running task in the interpreter and thread states. Walking
 * tasks also needs entries of the main _Py_DebugOffsets table that plain
 * stacks do not use (generators, sets, ints, types, list nodes).
 *
 * pyprofd ships only the *positions* of those entries per minor version
 * (struct pyasync_schema, in debug_offsets_3_14.c and _3_15.c) plus the few
 * facts no table carries: the generator frame-state values (renumbered in
 * 3.15) and where a suspended coroutine keeps the object it awaits. CPython
 * 3.13 has no asyncio table: pyasync_schema_for(13) is NULL.
 *
 * pyasync_layout_load() validates every offset async walking will use, once:
 * section sizes non-zero and no larger than pyprofd copies (PYASYNC_MAX_*),
 * fields aligned and inside their section, the frame embedded in a generator
 * inside the generator. A failure names the entry. After that the walk uses
 * the offsets without re-checking them.
 *
 * Thread safety: schemas are immutable; a loaded layout is a plain value.
 */
#ifndef PYPROFD_PYTHON_PYASYNC_H
#define PYPROFD_PYTHON_PYASYNC_H

#include "base/compat.h"

#include "python/pyabi.h"

/** The entries async walking reads, PYAIO_<ID>, from asyncio_offsets.def. */
enum pyaio_id {
#define PYAIO(id, table, name) PYAIO_##id,
#include "python/asyncio_offsets.def"
#undef PYAIO
    PYAIO_COUNT
};

/** Which table an entry is in. */
enum pyaio_table { PYAIO_TABLE_DEBUG, PYAIO_TABLE_ASYNCIO };

/** Size of the asyncio table in every version that has one (13 entries). */
#define PYASYNC_TABLE_SIZE 104u
/** Largest objects pyprofd copies whole (Debian: task 168, generator 160). */
#define PYASYNC_MAX_TASK 1024u
#define PYASYNC_MAX_GEN  1024u
/** Sanity caps on objects pyprofd only reads fields of. */
#define PYASYNC_MAX_OBJ 4096u
/** Type flags (all versions): the type is an int / a str subclass. */
#define PYASYNC_TPFLAGS_LONG_SUBCLASS    (1ull << 24)
#define PYASYNC_TPFLAGS_UNICODE_SUBCLASS (1ull << 28)
/** A set table entry: {key, hash}. */
#define PYASYNC_SET_ENTRY 16u

/** One minor version's entry positions and the facts outside the tables. */
struct pyasync_schema {
    unsigned minor;
    uint16_t pos[PYAIO_COUNT]; /* byte position in the entry's table */
    /* generator frame states (gi_frame_state, an int8) */
    int8_t fs_created, fs_suspended, fs_yield_from, fs_yield_from_locked, fs_executing;
    int8_t fs_completed, fs_cleared;
    /* a coroutine suspended in `await` keeps the awaited object this many
     * bytes below its frame's stackpointer */
    uint8_t await_below_sp;
};

extern const struct pyasync_schema pyasync_schema_3_14;
extern const struct pyasync_schema pyasync_schema_3_15;

/** Kinds of generator frame state, as the walk needs them. */
enum pyasync_frame_state {
    PYASYNC_FS_GONE,      /* completed, cleared or unknown: no frame */
    PYASYNC_FS_CREATED,   /* not started: the frame sits at its first line */
    PYASYNC_FS_SUSPENDED, /* suspended at a yield (not awaiting another object) */
    PYASYNC_FS_AWAITING,  /* suspended in `await`/`yield from`: follow the awaited object */
    PYASYNC_FS_EXECUTING, /* running now: its frame is on a thread's stack */
};

/** Validated offsets (relative to the start of the object each prefix names). */
struct pyasync_layout {
    uint64_t tag_mask; /* low tag bits of pointers from value stacks / frames */
    uint32_t fr_size, fr_executable, fr_instr_ptr, fr_stackpointer, fr_owner;
    uint32_t fr_tlbc_index; /* free-threaded 3.14+ (has_tlbc), as in struct py_layout */
    bool has_tlbc;
    uint32_t ob_type, tp_flags, tp_size;
    uint32_t set_used, set_table, set_mask, set_size;
    uint32_t long_lv_tag, long_ob_digit, long_size;
    uint32_t gen_size, gen_iframe, gen_frame_state;
    uint32_t llist_next;
    uint32_t task_size, task_name, task_awaited_by, task_is_task, task_awaited_by_is_set;
    uint32_t task_coro, task_node;
    uint32_t in_tasks_head;
    uint32_t ts_size, ts_running_loop, ts_running_task, ts_tasks_head;
    uint32_t await_below_sp;
    int8_t fs_value[8]; /* generator state values, by enum pyasync_frame_state order below */
    enum pyasync_frame_state fs_kind[8];
    unsigned nfs;
};

/** The schema for CPython 3.<minor>, or NULL (3.13 and unknown versions). */
const struct pyasync_schema *pyasync_schema_for(unsigned minor);

/** "section.field" name of an entry, for messages. */
const char *pyasync_entry_name(enum pyaio_id id);

/** The table entry @a id lives in. */
enum pyaio_table pyasync_entry_table(enum pyaio_id id);

/**
 * Validates the asyncio table (@a aio, @a aio_len bytes, at least
 * PYASYNC_TABLE_SIZE) and the entries async walking needs from the main
 * table (@a debug, @a debug_len bytes: the schema's table_size of
 * pyabi.h) for version @a v, with @a base the layout the unwinder loaded from
 * the same main table, and fills @a out. Returns 0; -ENOTSUP when the
 * version has no asyncio table (@a why says so); -EPROTO when a table fails
 * validation, with @a why naming the entry, e.g. "asyncio offsets:
 * 'asyncio_task_object.task_coro' = 4000 + field width is outside its
 * section of size 168".
 */
PYPROFD_WARN_UNUSED int pyasync_layout_load(const struct py_version *v,
                                            const struct py_layout *base, const void *debug,
                                            size_t debug_len, const void *aio, size_t aio_len,
                                            struct pyasync_layout *out, char *why, size_t why_len);

/** What the generator frame-state value @a state means in @a l. */
enum pyasync_frame_state pyasync_frame_state(const struct pyasync_layout *l, int8_t state);

#endif /* PYPROFD_PYTHON_PYASYNC_H */
