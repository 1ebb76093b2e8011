/* SPDX-License-Identifier: MIT */
/*
 * pyabi.h: CPython's ABI as data. A target's _Py_DebugOffsets table tells
 * where every field the unwinder reads sits in that very build; pyprofd ships
 * only the *positions* of the entries in the table, per minor version
 * (debug_offsets_3_13.c, _3_14.c, _3_15.c), plus the handful of facts the table
 * does not carry (schema fields below).
 *
 * pyabi_layout_load() turns the raw table (untrusted: it was read from another
 * process) into a struct py_layout after validating every offset and size
 * pyprofd will use: each section size is non-zero and no larger than what
 * pyprofd is prepared to copy (the PYABI_MAX_* caps), each field is aligned to
 * its width and lies inside its section, nested fields lie inside their outer
 * section. After that the hot path uses the offsets without re-checking them.
 *
 * The unwinder never compares versions: where behaviour differs, the layout
 * carries a capability (has_base_frame, holds_gil_kind, ...).
 *
 * Thread safety: schemas are immutable; a loaded layout is a plain value.
 */
#ifndef PYPROFD_PYTHON_PYABI_H
#define PYPROFD_PYTHON_PYABI_H

#include "base/compat.h"

#include "python/pyversion.h"

/** The entries pyprofd reads, PYOFF_<ID>, from debug_offsets.def. */
enum pyoff_id {
#define PYOFF(id, name) PYOFF_##id,
#include "python/debug_offsets.def"
#undef PYOFF
    PYOFF_COUNT
};

/** Largest sections pyprofd copies into local buffers. */
#define PYABI_MAX_TSTATE 4096u /* PyThreadState (Debian 3.15: 888) */
#define PYABI_MAX_FRAME  512u  /* _PyInterpreterFrame fixed part (88) */
#define PYABI_MAX_CODE   1024u /* PyCodeObject fixed part (216) */
#define PYABI_MAX_STRHDR 256u  /* str / bytes object headers (64 / 40) */
#define PYABI_MAX_TABLE  4096u /* the _Py_DebugOffsets table itself (888) */
/** Sanity caps on structs pyprofd only reads fields of (Debian: 346568, 226240). */
#define PYABI_MAX_RUNTIME (16u << 20)
#define PYABI_MAX_INTERP  (16u << 20)

/** One minor version's table layout and the facts outside the table. */
struct pyabi_schema {
    unsigned minor;
    size_t table_size;
    uint16_t pos[PYOFF_COUNT]; /* byte position of each entry; 0 = absent */
    /* Facts not in the table (0 where the table has them or they do not apply). */
    uint32_t threads_main_after_head; /* 3.13: interp->threads.main = threads_head + 8 */
    uint32_t holds_gil_status_mask;   /* 3.13: a bit of tstate->_status */
    uint32_t holds_gil_int;           /* 3.14: int at this tstate offset */
    uint32_t current_exception;       /* 3.13/3.14: tstate offsets */
    uint32_t exc_state;
    /* compact non-ASCII str data (3.13/3.14): this many bytes after the
     * PyASCIIObject (utf8_length and utf8), in either build */
    uint32_t compact_after_ascii;
    uint64_t tag_mask; /* low tag bits of f_executable (_PyStackRef) */
    /* free-threaded builds: str state bits above `interned` move up by this
     * much (3.14+ make it a byte; 3.13 keeps the 2-bit field) */
    unsigned ft_str_state_shift;
    /* 3.9, 3.10 (generated layouts with frame objects): f_lasti's unit in
     * bytes, and the line table's format (enum pyabi_lines) */
    unsigned lasti_scale;
    unsigned lines;
};

/**
 * One entry of a generated layout: its value, and whether the version has it
 * (a value of 0 is a real offset: 3.12's frame->f_code is at +0).
 */
struct pyabi_gen_entry {
    bool set;
    uint32_t value;
};

/**
 * The layout of a version without _Py_DebugOffsets (3.9-3.12), in the table's
 * own terms: what each entry would hold had the version one. Generated from
 * the version's headers (agent/python/layouts_generated.c, written by
 * scripts/gen-pylayouts.sh); pyabi_layout_generated() validates it the same
 * way as a live table.
 */
struct pyabi_generated {
    unsigned minor;
    const char *source; /* "CPython 3.11.2 headers (...)": where it came from */
    struct pyabi_gen_entry e[PYOFF_COUNT];
    /* what no entry says */
    uint32_t compact_after_ascii; /* as in pyabi_schema */
};

extern const struct pyabi_generated pyabi_generated_3_9;
extern const struct pyabi_generated pyabi_generated_3_10;
extern const struct pyabi_generated pyabi_generated_3_11;
extern const struct pyabi_generated pyabi_generated_3_12;

/** The generated layout of CPython 3.<minor>, or NULL when there is none. */
const struct pyabi_generated *pyabi_generated_for(unsigned minor);

extern const struct pyabi_schema pyabi_schema_3_13;
extern const struct pyabi_schema pyabi_schema_3_14;
extern const struct pyabi_schema pyabi_schema_3_15;

enum pyabi_gil_kind {
    PYABI_GIL_STATUS_BIT,     /* holds_gil is a bit of the _status word */
    PYABI_GIL_INT,            /* holds_gil is an int field */
    PYABI_GIL_INTERP_HOLDER,  /* 3.12: the interpreter's GIL is locked, last by it */
    PYABI_GIL_RUNTIME_HOLDER, /* <= 3.11: the runtime's GIL is locked, last by it */
};

/** Line-table formats: a layout's `lines`. */
enum pyabi_lines {
    PYABI_LINES_LOCATIONS, /* 3.11+: co_linetable, the location table (PEP 657) */
    PYABI_LINES_LNOTAB,    /* 3.9: co_lnotab, (byte delta, line delta) pairs */
    PYABI_LINES_3_10,      /* 3.10: co_linetable, (byte delta, line delta) ranges (PEP 626) */
};

/** Where a layout came from (probe shows it). */
enum pyabi_source {
    PYABI_SOURCE_TABLE,     /* the target's own _Py_DebugOffsets */
    PYABI_SOURCE_GENERATED, /* a table generated from the version's headers */
};

/** Frame owner value of entry frames (and the 3.15 base frame), all versions. */
#define PYABI_OWNER_THREAD      0
#define PYABI_OWNER_GENERATOR   1
#define PYABI_OWNER_INTERPRETER 3
/** Bytes of a _PyStackChunk header: previous +0, size +8, top +16. */
#define PYABI_CHUNK_HEADER 24u
/**
 * str state bits: a 2-bit `interned`, then kind bits 2-4, compact bit 5,
 * ascii bit 6; free-threaded 3.14+ make `interned` a whole byte, which moves
 * the rest up by 6 (the layout's str_state_shift).
 */
#define PYABI_STR_KIND(state, shift)    (((state) >> (2u + (shift))) & 7u)
#define PYABI_STR_COMPACT(state, shift) (((state) >> (5u + (shift))) & 1u)
#define PYABI_STR_ASCII(state, shift)   (((state) >> (6u + (shift))) & 1u)
#define PYABI_STR_FT_SHIFT              6u
/**
 * tstate->_status bit `active` (3.13-3.15, both builds): the thread is
 * attached to its interpreter. In a GIL build only the GIL holder is; in a
 * free-threaded build every thread running Python (or attached C) code is.
 */
#define PYABI_STATUS_ACTIVE (1u << 4)
/**
 * PyTypeObject fields, the same in every version pyprofd reads (3.9+): the
 * instance size, and the PyMemberDef table (40 bytes an entry: name +0,
 * type +8, offset +16, flags +24, doc +32; a NULL name ends it), which gives
 * a type's attribute offsets from the running binary.
 */
#define PYABI_TYPE_BASICSIZE 32u
#define PYABI_TYPE_MEMBERS   240u
#define PYABI_MEMBERDEF_SIZE 40u
#define PYABI_MEMBERDEF_OFF  16u

/** Cap on a free-threaded code object's thread-local bytecode copies. */
#define PYABI_MAX_TLBC 4096

/**
 * Validated offsets of one target. Offsets are relative to the start of the
 * struct named by the prefix: rt_ runtime, in_ interpreter state, ts_ thread
 * state, fr_ frame, co_ code object, str_ / bytes_ objects.
 */
struct py_layout {
    struct py_version version;
    /*
     * Free-threaded (Py_GIL_DISABLED) build: holds_gil is the `active` bit
     * (attached), str state bits are shifted by str_state_shift, and with
     * has_tlbc (3.14+) a frame's tlbc_index > 0 selects a per-thread copy of
     * the bytecode: code + co_tlbc points at {ssize_t n; void *entry[n]},
     * and instr_ptr is measured against entry[tlbc_index]. The copies are
     * all reset when the interpreter's tlbc_generation changes.
     */
    bool free_threaded, has_tlbc;
    unsigned str_state_shift;
    uint32_t in_tlbc_generation, fr_tlbc_index, co_tlbc;
    size_t table_size;
    uint32_t rt_finalizing, rt_interpreters_head;
    uint32_t in_id, in_next, in_threads_head, in_threads_main;
    uint32_t in_gc_collecting, in_gc_frame, in_gil_locked, in_gil_holder, in_code_generation;
    bool has_gc_frame, has_code_generation;
    uint32_t ts_size, ts_next, ts_interp, ts_current_frame, ts_base_frame, ts_thread_id;
    uint32_t ts_native_thread_id, ts_datastack_chunk, ts_status, ts_holds_gil, ts_gil_requested;
    uint32_t ts_current_exception, ts_exc_info, ts_exc_state, ts_exc_value;
    uint32_t ei_exc_value; /* _PyErr_StackItem.exc_value */
    bool has_base_frame, has_gil_requested;
    enum pyabi_gil_kind holds_gil_kind;
    uint32_t holds_gil_mask; /* PYABI_GIL_STATUS_BIT: mask in the status word */
    /* <= 3.11: the GIL is the runtime's (PYABI_GIL_RUNTIME_HOLDER) */
    uint32_t rt_gil_locked, rt_gil_holder;
    /*
     * 3.11, 3.12: the current frame is not in the thread state but in the
     * _PyCFrame it points to (on the C stack of the eval loop running):
     * tstate + ts_cframe -> cframe, cframe + cf_current_frame -> frame.
     */
    bool has_cframe;
    uint32_t ts_cframe, cf_current_frame;
    /* 3.11: entry frames are Python frames with is_entry set, not shims */
    bool has_is_entry;
    uint32_t fr_is_entry;
    /*
     * 3.9, 3.10: the thread state's `frame` (ts_current_frame) points at a
     * heap-allocated PyFrameObject, linked by f_back (fr_previous), running
     * f_code (fr_executable), with no owner or entry mark: every frame is a
     * Python frame, the chain ends at a NULL f_back. fr_instr_ptr is f_lasti,
     * a 32-bit int (-1: not started), counting bytes (lasti_scale 1, 3.9) or
     * code units (lasti_scale 2, 3.10) into co_code.
     */
    unsigned lasti_scale;
    /* and fr_state, a char: f_executing (3.9: 1 while its loop runs it) or
     * f_state (3.10: 0, FRAME_EXECUTING); every frame below the top of a
     * live chain is running its loop, so one that is not was freed or
     * reused meanwhile (a torn read). fr_state_live is the running value. */
    bool has_fr_state;
    uint32_t fr_state;
    int8_t fr_state_live;
    /* the line table's format (enum pyabi_lines) */
    unsigned lines;
    bool frame_objects;
    /* thread states carry native_thread_id (3.11+) and data-stack chunks
     * (3.11+); before that the thread is known by its pthread_t only */
    bool has_native_thread_id, has_datastack;
    /* interp->threads.main exists (3.12+); without it the tail is the main thread */
    bool has_threads_main;
    enum pyabi_source source;
    const char *source_detail; /* generated: the headers it came from (static) */
    uint32_t fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
    uint64_t tag_mask;
    uint32_t co_size, co_filename, co_qualname, co_linetable, co_firstlineno, co_adaptive;
    uint32_t co_name; /* (co_qualname is co_name <= 3.10) */
    uint32_t fo_size; /* <= 3.10: sizeof(PyFrameObject) */
    /* generated layouts: offsets the target's own type objects gave and the
     * layout agreed with (PyCode_Type, PyFrame_Type member tables) */
    unsigned members_agreed;
    uint32_t co_read_len; /* bytes of a code object the unwinder copies */
    uint32_t str_size, str_length, str_state, str_ascii_data, str_compact_data;
    uint32_t bytes_ob_size, bytes_ob_sval;
    uint32_t ob_type; /* PyObject.ob_type */
};

/** The schema for CPython 3.<minor>, or NULL when pyprofd has none. */
const struct pyabi_schema *pyabi_schema_for(unsigned minor);

/** The most bytes pyabi_runtime_head_len() asks for. */
#define PYABI_RUNTIME_HEAD_MAX 64u

/**
 * How many bytes at the start of a CPython @a v runtime (_PyRuntime: its
 * debug table's first entries) pyabi_runtime_head() needs, at most
 * PYABI_RUNTIME_HEAD_MAX: 0 for a version without a table (its generated
 * layout names the place itself) or one pyprofd has no layout of.
 */
size_t pyabi_runtime_head_len(const struct py_version *v);

/**
 * Where a CPython @a v runtime keeps interpreters_head (its first
 * interpreter; NULL until the runtime is initialised), as an offset from
 * the start of _PyRuntime: how discovery tells a started interpreter from
 * one that is only mapped. A version with a debug table says it in that
 * table: @a start holds the first @a len bytes of the runtime (untrusted,
 * read from the target; NULL when pyabi_runtime_head_len() is 0), and only
 * the entries needed are checked (the whole table is validated later, by
 * pyabi_layout_load()). Returns 0 with *@a off; -ENOTSUP when pyprofd has
 * no layout of the version; -EAGAIN when @a len is shorter than
 * pyabi_runtime_head_len(); -EPROTO when the table's runtime size leaves no
 * pointer at the offset it gives.
 */
PYPROFD_WARN_UNUSED int pyabi_runtime_head(const struct py_version *v, const void *start,
                                           size_t len, uint64_t *off);

/**
 * Whether the evaluation loops of a target laid out by @a l keep their entry
 * frames on the C stack, each in its loop's own C frame (3.12 on), where
 * native stacks are joined by address; before, no frame marks it there and
 * the loops are found by their symbol (_PyEval_EvalFrameDefault).
 */
bool pyabi_entry_frames_on_c_stack(const struct py_layout *l);

/** "section.field" name of an entry, for messages. */
const char *pyabi_entry_name(enum pyoff_id id);

/**
 * Validates the @a len bytes of table at @a table (a copy of the target's
 * _Py_DebugOffsets, at least the schema's table_size) for version @a v and
 * fills @a out. Returns 0; -ENOTSUP when there is no schema for the version
 * (@a why says so); -EPROTO when the table fails
 * validation, with @a why naming the entry, e.g. "debug offsets:
 * 'thread_state.current_frame' = 4000 is outside thread_state (size 888)".
 */
PYPROFD_WARN_UNUSED int pyabi_layout_load(const struct py_version *v, const void *table, size_t len,
                                          struct py_layout *out, char *why, size_t why_len);

/**
 * Fills @a out for version @a v from its generated layout @a gen (3.9 to
 * 3.12), with the same checks pyabi_layout_load() applies to a live
 * table. Returns 0; -ENOTSUP when pyprofd cannot walk that version's stacks
 * yet (@a why says so); -EPROTO when the generated data fails a check (a
 * defect in pyprofd, named in @a why).
 */
PYPROFD_WARN_UNUSED int pyabi_layout_generated(const struct py_version *v,
                                               const struct pyabi_generated *gen,
                                               struct py_layout *out, char *why, size_t why_len);

#endif /* PYPROFD_PYTHON_PYABI_H */
