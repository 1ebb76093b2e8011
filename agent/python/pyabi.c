/* SPDX-License-Identifier: MIT */
/*
 * pyabi.c: schema selection and validation of a target's _Py_DebugOffsets
 * table (see pyabi.h). Validation happens once, at attach; every check names
 * the entry that failed, so a bad table is diagnosable from one log line.
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "python/pyabi.h"
#include "python/pycheck.h"

static const char *const pyabi_names[PYOFF_COUNT] = {
#define PYOFF(id, name) [PYOFF_##id] = (name), /* NOLINT(bugprone-macro-parentheses) */
#include "python/debug_offsets.def"
#undef PYOFF
};

const char *pyabi_entry_name(enum pyoff_id id)
{
    return (unsigned)id < PYOFF_COUNT ? pyabi_names[id] : "?";
}

const struct pyabi_schema *pyabi_schema_for(unsigned minor)
{
    switch (minor) {
    case 13:
        return &pyabi_schema_3_13;
    case 14:
        return &pyabi_schema_3_14;
    case 15:
        return &pyabi_schema_3_15;
    default:
        return NULL;
    }
}

size_t pyabi_runtime_head_len(const struct py_version *v)
{
    unsigned minor = v->major == 3 ? v->minor : 0;
    const struct pyabi_generated *gen = pyabi_generated_for(minor);
    const struct pyabi_schema *s = pyabi_schema_for(minor);
    if ((gen && gen->e[PYOFF_RUNTIME_INTERPRETERS_HEAD].set) || !s)
        return 0;
    size_t size = s->pos[PYOFF_RUNTIME_SIZE], head = s->pos[PYOFF_RUNTIME_INTERPRETERS_HEAD];
    size_t need = (size > head ? size : head) + 8;
    return size && head && need <= PYABI_RUNTIME_HEAD_MAX ? need : 0;
}

int pyabi_runtime_head(const struct py_version *v, const void *start, size_t len, uint64_t *off)
{
    unsigned minor = v->major == 3 ? v->minor : 0;
    const struct pyabi_generated *gen = pyabi_generated_for(minor);
    if (gen && gen->e[PYOFF_RUNTIME_INTERPRETERS_HEAD].set) {
        *off = gen->e[PYOFF_RUNTIME_INTERPRETERS_HEAD].value; /* no table (3.9-3.12) */
        return 0;
    }
    size_t need = pyabi_runtime_head_len(v);
    if (need == 0)
        return -ENOTSUP;
    if (len < need)
        return -EAGAIN;
    const struct pyabi_schema *s = pyabi_schema_for(minor);
    const unsigned char *t = start;
    uint64_t size = load_le64(t + s->pos[PYOFF_RUNTIME_SIZE]);
    uint64_t head = load_le64(t + s->pos[PYOFF_RUNTIME_INTERPRETERS_HEAD]);
    if (head > size || size - head < 8)
        return -EPROTO;
    *off = head;
    return 0;
}

bool pyabi_entry_frames_on_c_stack(const struct py_layout *l)
{
    /* 3.9, 3.10: a loop per frame object; 3.11: the first frame a loop runs
     * carries is_entry; 3.12 on: a shim frame in the loop's C frame */
    return !l->frame_objects && !l->has_is_entry;
}

/* Validation state: the table, its schema, and the first error. */
struct pyabi_check {
    const unsigned char *table;
    const struct pyabi_schema *schema;
    const char *what; /* "debug offsets", "generated layout" */
    struct pycheck chk;
};

static bool pyabi_has(const struct pyabi_check *c, enum pyoff_id id)
{
    return c->schema->pos[id] != 0;
}

static uint64_t pyabi_raw(const struct pyabi_check *c, enum pyoff_id id)
{
    return load_le64(c->table + c->schema->pos[id]);
}

static void pyabi_fail(struct pyabi_check *c, enum pyoff_id id, uint64_t value, const char *what,
                       uint64_t bound)
{
    pycheck_fail(&c->chk, c->what, pyabi_entry_name(id), value, what, bound);
}

/* A section size: non-zero and at most @cap bytes. */
static uint32_t pyabi_size(struct pyabi_check *c, enum pyoff_id id, uint64_t cap)
{
    return pycheck_size(&c->chk, c->what, pyabi_entry_name(id), pyabi_raw(c, id), cap);
}

/* A field of @width bytes at @base + entry, inside a section of @size bytes. */
static uint32_t pyabi_field_at(struct pyabi_check *c, enum pyoff_id id, uint64_t base,
                               uint64_t size, unsigned width)
{
    return pycheck_field(&c->chk, c->what, pyabi_entry_name(id), pyabi_raw(c, id), base, size,
                         width);
}

static uint32_t pyabi_field(struct pyabi_check *c, enum pyoff_id id, uint64_t size, unsigned width)
{
    return pyabi_field_at(c, id, 0, size, width);
}

/* A fact pyprofd ships (not from the table) must still fit the reported size. */
static uint32_t pyabi_fixed(struct pyabi_check *c, enum pyoff_id section, uint32_t off,
                            uint64_t size, unsigned width)
{
    if ((uint64_t)off + width > size)
        pyabi_fail(c, section, size, "is too small for a known field at", off);
    return off;
}

/*
 * Fills @out from @table laid out by @s: a live _Py_DebugOffsets table, or a
 * generated layout written out as one (pyabi_layout_generated()).
 */
static int pyabi_fill(const struct py_version *v, const struct pyabi_schema *s,
                      const unsigned char *table, const char *what, struct py_layout *out,
                      char *why, size_t why_len)
{
    struct pyabi_check c = {
        .table = table, .schema = s, .what = what, .chk = {.why = why, .why_len = why_len}};
    struct py_layout l = {.version = *v,
                          .ob_type = 8,
                          .table_size = s->table_size,
                          .tag_mask = s->tag_mask,
                          .free_threaded = v->free_threaded,
                          .str_state_shift = v->free_threaded ? s->ft_str_state_shift : 0};
    const unsigned P = sizeof(uint64_t); /* pointers and ssize_t */

    uint64_t rt_size = pyabi_size(&c, PYOFF_RUNTIME_SIZE, PYABI_MAX_RUNTIME);
    l.rt_finalizing = pyabi_field(&c, PYOFF_RUNTIME_FINALIZING, rt_size, P);
    l.rt_interpreters_head = pyabi_field(&c, PYOFF_RUNTIME_INTERPRETERS_HEAD, rt_size, P);

    uint64_t in_size = pyabi_size(&c, PYOFF_INTERP_SIZE, PYABI_MAX_INTERP);
    l.in_id = pyabi_field(&c, PYOFF_INTERP_ID, in_size, 8);
    l.in_next = pyabi_field(&c, PYOFF_INTERP_NEXT, in_size, P);
    l.in_threads_head = pyabi_field(&c, PYOFF_INTERP_THREADS_HEAD, in_size, P);
    l.has_threads_main = true;
    if (pyabi_has(&c, PYOFF_INTERP_THREADS_MAIN)) {
        l.in_threads_main = pyabi_field(&c, PYOFF_INTERP_THREADS_MAIN, in_size, P);
    } else if (s->threads_main_after_head) {
        l.in_threads_main = pyabi_fixed(&c, PYOFF_INTERP_SIZE,
                                        l.in_threads_head + s->threads_main_after_head, in_size, P);
    } else {
        /* none (3.11): the tail of the list is the main thread; a field that
         * is there anyway is read in its place, and not used */
        l.has_threads_main = false;
        l.in_threads_main = l.in_threads_head;
    }
    if (pyabi_has(&c, PYOFF_INTERP_GIL_LOCKED)) {
        l.in_gil_locked = pyabi_field(&c, PYOFF_INTERP_GIL_LOCKED, in_size, 4);
        l.in_gil_holder = pyabi_field(&c, PYOFF_INTERP_GIL_HOLDER, in_size, P);
    } else {
        l.in_gil_locked = l.in_gil_holder = l.in_threads_head; /* the runtime's (<= 3.11) */
    }
    if (pyabi_has(&c, PYOFF_INTERP_CODE_GENERATION)) {
        l.in_code_generation = pyabi_field(&c, PYOFF_INTERP_CODE_GENERATION, in_size, 8);
        l.has_code_generation = true;
    }
    /* gc is a struct embedded in the interpreter state */
    uint32_t gc = pyabi_field(&c, PYOFF_INTERP_GC, in_size, 8);
    uint64_t gc_size = pyabi_size(&c, PYOFF_GC_SIZE, in_size);
    if (!c.chk.failed && gc + gc_size > in_size)
        pyabi_fail(&c, PYOFF_GC_SIZE, gc_size, "overruns interpreter_state at offset", gc);
    l.in_gc_collecting = gc + pyabi_field(&c, PYOFF_GC_COLLECTING, gc_size, 4);
    if (pyabi_has(&c, PYOFF_GC_FRAME)) {
        l.in_gc_frame = gc + pyabi_field(&c, PYOFF_GC_FRAME, gc_size, P);
        l.has_gc_frame = true;
    }

    l.ts_size = pyabi_size(&c, PYOFF_TSTATE_SIZE, PYABI_MAX_TSTATE);
    l.ts_next = pyabi_field(&c, PYOFF_TSTATE_NEXT, l.ts_size, P);
    l.ts_interp = pyabi_field(&c, PYOFF_TSTATE_INTERP, l.ts_size, P);
    if (pyabi_has(&c, PYOFF_TSTATE_CFRAME)) {
        /* 3.11, 3.12: through the _PyCFrame (three pointers) */
        l.has_cframe = true;
        l.ts_cframe = pyabi_field(&c, PYOFF_TSTATE_CFRAME, l.ts_size, P);
        l.cf_current_frame = pyabi_field(&c, PYOFF_CFRAME_CURRENT_FRAME, 3 * P, P);
        l.ts_current_frame = l.ts_cframe;
    } else if (pyabi_has(&c, PYOFF_TSTATE_FRAME)) {
        l.ts_current_frame = pyabi_field(&c, PYOFF_TSTATE_FRAME, l.ts_size, P); /* <= 3.10 */
    } else {
        l.ts_current_frame = pyabi_field(&c, PYOFF_TSTATE_CURRENT_FRAME, l.ts_size, P);
    }
    l.ts_thread_id = pyabi_field(&c, PYOFF_TSTATE_THREAD_ID, l.ts_size, P);
    if (pyabi_has(&c, PYOFF_TSTATE_NATIVE_THREAD_ID)) {
        l.ts_native_thread_id = pyabi_field(&c, PYOFF_TSTATE_NATIVE_THREAD_ID, l.ts_size, P);
        l.has_native_thread_id = true;
    } else {
        l.ts_native_thread_id = l.ts_thread_id; /* not read (<= 3.10) */
    }
    if (pyabi_has(&c, PYOFF_TSTATE_DATASTACK_CHUNK)) {
        l.ts_datastack_chunk = pyabi_field(&c, PYOFF_TSTATE_DATASTACK_CHUNK, l.ts_size, P);
        l.has_datastack = true;
    } else {
        l.ts_datastack_chunk = l.ts_next; /* not read (<= 3.10) */
    }
    if (pyabi_has(&c, PYOFF_TSTATE_STATUS))
        l.ts_status = pyabi_field(&c, PYOFF_TSTATE_STATUS, l.ts_size, 4);
    else
        l.ts_status = l.ts_next; /* not read for anything (3.11) */
    if (pyabi_has(&c, PYOFF_TSTATE_BASE_FRAME)) {
        l.ts_base_frame = pyabi_field(&c, PYOFF_TSTATE_BASE_FRAME, l.ts_size, P);
        l.has_base_frame = true;
    }
    if (v->free_threaded) {
        /* no GIL to hold: "attached" is what only the holder is in a GIL build */
        l.holds_gil_kind = PYABI_GIL_STATUS_BIT;
        l.ts_holds_gil = l.ts_status;
        l.holds_gil_mask = PYABI_STATUS_ACTIVE;
    } else if (pyabi_has(&c, PYOFF_TSTATE_HOLDS_GIL)) {
        l.holds_gil_kind = PYABI_GIL_INT;
        l.ts_holds_gil = pyabi_field(&c, PYOFF_TSTATE_HOLDS_GIL, l.ts_size, 4);
    } else if (s->holds_gil_int) {
        l.holds_gil_kind = PYABI_GIL_INT;
        l.ts_holds_gil = pyabi_fixed(&c, PYOFF_TSTATE_SIZE, s->holds_gil_int, l.ts_size, 4);
    } else if (s->holds_gil_status_mask) {
        l.holds_gil_kind = PYABI_GIL_STATUS_BIT;
        l.ts_holds_gil = l.ts_status;
        l.holds_gil_mask = s->holds_gil_status_mask;
    } else if (pyabi_has(&c, PYOFF_INTERP_GIL_HOLDER)) {
        l.holds_gil_kind = PYABI_GIL_INTERP_HOLDER; /* 3.12 */
        l.ts_holds_gil = l.ts_next;
    } else {
        l.holds_gil_kind = PYABI_GIL_RUNTIME_HOLDER; /* <= 3.11 */
        l.ts_holds_gil = l.ts_next;
        l.rt_gil_locked = pyabi_field(&c, PYOFF_RUNTIME_GIL_LOCKED, rt_size, 4);
        l.rt_gil_holder = pyabi_field(&c, PYOFF_RUNTIME_GIL_HOLDER, rt_size, P);
    }
    if (pyabi_has(&c, PYOFF_TSTATE_GIL_REQUESTED)) {
        l.ts_gil_requested = pyabi_field(&c, PYOFF_TSTATE_GIL_REQUESTED, l.ts_size, 4);
        l.has_gil_requested = true;
    }
    /* current_exception is followed by exc_info; exc_state embeds exc_value */
    if (pyabi_has(&c, PYOFF_TSTATE_EXC_INFO)) {
        /* a generated layout says where each is (<= 3.11: curexc_type, then
         * two more before exc_info) */
        l.ts_current_exception = pyabi_field(&c, PYOFF_TSTATE_CURRENT_EXCEPTION, l.ts_size, P);
        l.ts_exc_state = pyabi_field(&c, PYOFF_TSTATE_EXC_STATE, l.ts_size, P);
        l.ts_exc_value =
            pyabi_field_at(&c, PYOFF_ERR_STACKITEM_EXC_VALUE, l.ts_exc_state, l.ts_size, P);
        l.ei_exc_value = l.ts_exc_value - l.ts_exc_state;
    } else if (pyabi_has(&c, PYOFF_TSTATE_CURRENT_EXCEPTION)) {
        l.ts_current_exception = pyabi_field(&c, PYOFF_TSTATE_CURRENT_EXCEPTION, l.ts_size, 2 * P);
        l.ts_exc_state = pyabi_field(&c, PYOFF_TSTATE_EXC_STATE, l.ts_size, P);
        l.ts_exc_value =
            pyabi_field_at(&c, PYOFF_ERR_STACKITEM_EXC_VALUE, l.ts_exc_state, l.ts_size, P);
        l.ei_exc_value = l.ts_exc_value - l.ts_exc_state;
    } else {
        l.ts_current_exception =
            pyabi_fixed(&c, PYOFF_TSTATE_SIZE, s->current_exception, l.ts_size, 2 * P);
        l.ts_exc_state = pyabi_fixed(&c, PYOFF_TSTATE_SIZE, s->exc_state, l.ts_size, P);
        l.ts_exc_value = l.ts_exc_state; /* exc_value is the item's first field */
    }
    if (pyabi_has(&c, PYOFF_TSTATE_EXC_INFO))
        l.ts_exc_info = pyabi_field(&c, PYOFF_TSTATE_EXC_INFO, l.ts_size, P);
    else
        l.ts_exc_info = l.ts_current_exception + P;

    if (pyabi_has(&c, PYOFF_FRAMEOBJ_SIZE)) {
        /* 3.9, 3.10: frame objects; only the start up to f_lasti is read
         * (with the int after it: the walk's checks compare 8 bytes) */
        uint64_t fo_size = pyabi_size(&c, PYOFF_FRAMEOBJ_SIZE, 4096);
        l.fo_size = (uint32_t)fo_size;
        l.frame_objects = true;
        l.fr_previous = pyabi_field(&c, PYOFF_FRAMEOBJ_BACK, fo_size, P);
        l.fr_executable = pyabi_field(&c, PYOFF_FRAMEOBJ_CODE, fo_size, P);
        l.fr_instr_ptr = pyabi_field(&c, PYOFF_FRAMEOBJ_LASTI, fo_size, 4);
        l.fr_size = l.fr_instr_ptr + 8;
        if (pyabi_has(&c, PYOFF_FRAMEOBJ_STATE)) {
            l.has_fr_state = true;
            l.fr_state = pyabi_field(&c, PYOFF_FRAMEOBJ_STATE, fo_size, 1);
            l.fr_state_live = s->minor == 9 ? 1 : 0; /* f_executing; 3.10: FRAME_EXECUTING */
            if (l.fr_state + 1 > l.fr_size)
                l.fr_size = l.fr_state + 1;
        }
        if (l.fr_previous + P > l.fr_size)
            l.fr_size = l.fr_previous + P;
        if (l.fr_executable + P > l.fr_size)
            l.fr_size = l.fr_executable + P;
        if (!c.chk.failed && l.fr_size > PYABI_MAX_FRAME)
            pyabi_fail(&c, PYOFF_FRAMEOBJ_LASTI, l.fr_instr_ptr, "exceeds pyprofd's limit of",
                       PYABI_MAX_FRAME);
        l.lasti_scale = s->lasti_scale;
        l.lines = s->lines;
        if (!c.chk.failed && (l.lasti_scale != 1 && l.lasti_scale != 2))
            pyabi_fail(&c, PYOFF_FRAMEOBJ_LASTI, l.lasti_scale, "has an f_lasti unit other than",
                       2);
    } else {
        l.fr_size = pyabi_size(&c, PYOFF_FRAME_SIZE, PYABI_MAX_FRAME);
        l.fr_previous = pyabi_field(&c, PYOFF_FRAME_PREVIOUS, l.fr_size, P);
        l.fr_executable = pyabi_field(&c, PYOFF_FRAME_EXECUTABLE, l.fr_size, P);
        l.fr_instr_ptr = pyabi_field(&c, PYOFF_FRAME_INSTR_PTR, l.fr_size, P);
        (void)pyabi_field(&c, PYOFF_FRAME_LOCALSPLUS, l.fr_size, P);
        l.fr_owner = pyabi_field(&c, PYOFF_FRAME_OWNER, l.fr_size, 1);
    }
    if (pyabi_has(&c, PYOFF_FRAME_IS_ENTRY)) {
        l.has_is_entry = true;
        l.fr_is_entry = pyabi_field(&c, PYOFF_FRAME_IS_ENTRY, l.fr_size, 1);
    }

    l.co_size = pyabi_size(&c, PYOFF_CODE_SIZE, PYABI_MAX_CODE);
    l.co_filename = pyabi_field(&c, PYOFF_CODE_FILENAME, l.co_size, P);
    uint32_t co_name = pyabi_field(&c, PYOFF_CODE_NAME, l.co_size, P);
    l.co_name = co_name;
    /* <= 3.10 have no co_qualname: functions are named by co_name */
    l.co_qualname = pyabi_has(&c, PYOFF_CODE_QUALNAME)
                        ? pyabi_field(&c, PYOFF_CODE_QUALNAME, l.co_size, P)
                        : co_name;
    l.co_linetable = pyabi_field(&c, PYOFF_CODE_LINETABLE, l.co_size, P);
    l.co_firstlineno = pyabi_field(&c, PYOFF_CODE_FIRSTLINENO, l.co_size, 4);
    /* the bytecode starts at the end of the fixed part: it may equal co_size
     * (<= 3.10: in a bytes object of its own, not read; f_lasti is an offset) */
    if (!l.frame_objects)
        l.co_adaptive = pyabi_field(&c, PYOFF_CODE_ADAPTIVE, (uint64_t)l.co_size + 2, 2);
    l.co_read_len = l.co_size;
    /* per-thread bytecode: the table has the entries in every 3.14+ build,
     * holding 0 where they do not apply (GIL builds) */
    if (v->free_threaded && pyabi_has(&c, PYOFF_CODE_TLBC)) {
        l.fr_tlbc_index = pyabi_field(&c, PYOFF_FRAME_TLBC_INDEX, l.fr_size, 4);
        l.co_tlbc = pyabi_field(&c, PYOFF_CODE_TLBC, l.co_size, P);
        l.in_tlbc_generation = pyabi_field(&c, PYOFF_INTERP_TLBC_GENERATION, in_size, 4);
        /* none of the three is the first field of its struct */
        if (!c.chk.failed && (!l.fr_tlbc_index || !l.co_tlbc || !l.in_tlbc_generation))
            pyabi_fail(&c, PYOFF_CODE_TLBC, l.co_tlbc,
                       "(or tlbc_index, tlbc_generation) is unset in a free-threaded build", 0);
        l.has_tlbc = true;
    }

    l.str_size = pyabi_size(&c, PYOFF_UNICODE_SIZE, PYABI_MAX_STRHDR);
    l.str_length = pyabi_field(&c, PYOFF_UNICODE_LENGTH, l.str_size, P);
    l.str_state = pyabi_field(&c, PYOFF_UNICODE_STATE, l.str_size, 4);
    l.str_ascii_data = pyabi_field(&c, PYOFF_UNICODE_ASCII_SIZE, (uint64_t)l.str_size + 1, 1);
    if (pyabi_has(&c, PYOFF_UNICODE_COMPACT_SIZE))
        l.str_compact_data =
            pyabi_field(&c, PYOFF_UNICODE_COMPACT_SIZE, (uint64_t)l.str_size + 1, 1);
    else
        l.str_compact_data = pyabi_fixed(&c, PYOFF_UNICODE_SIZE,
                                         l.str_ascii_data + s->compact_after_ascii, l.str_size, 1);
    /* The data sizes are values, not offsets; the header must hold the fields before them. */
    if (!c.chk.failed && (l.str_ascii_data <= l.str_state || l.str_compact_data < l.str_ascii_data))
        pyabi_fail(&c, PYOFF_UNICODE_ASCII_SIZE, l.str_ascii_data,
                   "is inconsistent with the str header fields; compact size", l.str_compact_data);

    uint64_t bytes_size = pyabi_size(&c, PYOFF_BYTES_SIZE, PYABI_MAX_STRHDR);
    l.bytes_ob_size = pyabi_field(&c, PYOFF_BYTES_OB_SIZE, bytes_size, P);
    l.bytes_ob_sval = pyabi_field(&c, PYOFF_BYTES_OB_SVAL, bytes_size, 1);

    if (pyabi_has(&c, PYOFF_OBJECT_TYPE))
        l.ob_type = pyabi_field(&c, PYOFF_OBJECT_TYPE, bytes_size, P);

    if (c.chk.failed)
        return -EPROTO;
    *out = l;
    if (why_len)
        why[0] = '\0';
    return 0;
}

int pyabi_layout_load(const struct py_version *v, const void *table, size_t len,
                      struct py_layout *out, char *why, size_t why_len)
{
    char name[32];
    const struct pyabi_schema *s = pyabi_schema_for(v->major == 3 ? v->minor : 0);
    if (!s) {
        snprintf(why, why_len,
                 "CPython %s is not supported yet (supported: " PYVERSION_SUPPORTED ")",
                 pyversion_format(v, name, sizeof(name)));
        return -ENOTSUP;
    }
    if (len < s->table_size) {
        snprintf(why, why_len, "debug offsets: table of %zu bytes is shorter than %zu", len,
                 s->table_size);
        return -EPROTO;
    }
    int err = pyabi_fill(v, s, table, "debug offsets", out, why, why_len);
    if (!err)
        out->source = PYABI_SOURCE_TABLE;
    return err;
}

/* Where entry @id sits in the table a generated layout is written out as. */
#define PYABI_GEN_POS(id) (PYVERSION_HEADER_SIZE + 8u * (unsigned)(id))

int pyabi_layout_generated(const struct py_version *v, const struct pyabi_generated *gen,
                           struct py_layout *out, char *why, size_t why_len)
{
    char name[32];
    if (v->major != 3 || !gen || gen->minor != v->minor) {
        snprintf(why, why_len,
                 "CPython %s is not supported yet (supported: " PYVERSION_SUPPORTED ")",
                 pyversion_format(v, name, sizeof(name)));
        return -ENOTSUP;
    }
    bool frame_objects = gen->e[PYOFF_FRAMEOBJ_SIZE].set && gen->e[PYOFF_TSTATE_FRAME].set;
    if (!frame_objects && !gen->e[PYOFF_TSTATE_CFRAME].set) {
        snprintf(why, why_len,
                 "generated layout of CPython %s has neither frame objects nor a cframe",
                 pyversion_format(v, name, sizeof(name)));
        return -EPROTO;
    }
    /* the layout written out as a table: every entry at its own position */
    _Static_assert(PYABI_GEN_POS(PYOFF_COUNT) <= PYABI_MAX_TABLE, "generated table fits");
    unsigned char table[PYABI_GEN_POS(PYOFF_COUNT)];
    /* what the headers do not say: f_lasti's unit and the line-table format */
    struct pyabi_schema s = {.minor = v->minor,
                             .table_size = sizeof(table),
                             .compact_after_ascii = gen->compact_after_ascii,
                             .lasti_scale = v->minor == 9 ? 1 : 2,
                             .lines = v->minor == 9    ? PYABI_LINES_LNOTAB
                                      : v->minor == 10 ? PYABI_LINES_3_10
                                                       : PYABI_LINES_LOCATIONS};
    memset(table, 0, sizeof(table));
    for (unsigned id = 0; id < PYOFF_COUNT; id++) {
        if (!gen->e[id].set)
            continue;
        s.pos[id] = (uint16_t)PYABI_GEN_POS(id);
        for (unsigned b = 0; b < 4; b++) /* little-endian, as a live table */
            table[PYABI_GEN_POS(id) + b] = (unsigned char)(gen->e[id].value >> (8 * b));
    }
    int err = pyabi_fill(v, &s, table, "generated layout", out, why, why_len);
    if (!err) {
        out->source = PYABI_SOURCE_GENERATED;
        out->source_detail = gen->source;
    }
    return err;
}
