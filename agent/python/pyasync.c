/* SPDX-License-Identifier: MIT */
/*
 * pyasync.c: schema selection and validation of the asyncio debug table and
 * of the main-table entries async walking uses (see pyasync.h). Runs once per
 * table found; every check names the entry that failed.
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "python/pyasync.h"
#include "python/pycheck.h"

#define PYASYNC_LLIST_NODE 16u /* struct llist_node: next, prev */

static const char *const pyasync_names[PYAIO_COUNT] = {
#define PYAIO(id, table, name) [PYAIO_##id] = (name), /* NOLINT(bugprone-macro-parentheses) */
#include "python/asyncio_offsets.def"
#undef PYAIO
};

static const enum pyaio_table pyasync_tables[PYAIO_COUNT] = {
#define PYAIO(id, table, name) [PYAIO_##id] = PYAIO_TABLE_##table,
#include "python/asyncio_offsets.def"
#undef PYAIO
};

const char *pyasync_entry_name(enum pyaio_id id)
{
    return (unsigned)id < PYAIO_COUNT ? pyasync_names[id] : "?";
}

enum pyaio_table pyasync_entry_table(enum pyaio_id id)
{
    return (unsigned)id < PYAIO_COUNT ? pyasync_tables[id] : PYAIO_TABLE_DEBUG;
}

const struct pyasync_schema *pyasync_schema_for(unsigned minor)
{
    switch (minor) {
    case 14:
        return &pyasync_schema_3_14;
    case 15:
        return &pyasync_schema_3_15;
    default:
        return NULL;
    }
}

/* Validation state: both tables, the schema, and the first error. */
struct pyasync_check {
    const unsigned char *debug, *aio;
    const struct pyasync_schema *schema;
    struct pycheck chk;
};

static uint64_t pyasync_raw(const struct pyasync_check *c, enum pyaio_id id)
{
    const unsigned char *t = pyasync_tables[id] == PYAIO_TABLE_ASYNCIO ? c->aio : c->debug;
    return load_le64(t + c->schema->pos[id]);
}

/* Which table an entry is in, as messages name it. */
static const char *pyasync_what(enum pyaio_id id)
{
    return pyasync_tables[id] == PYAIO_TABLE_ASYNCIO ? "asyncio offsets" : "debug offsets";
}

static void pyasync_fail(struct pyasync_check *c, enum pyaio_id id, uint64_t value,
                         const char *what, uint64_t bound)
{
    pycheck_fail(&c->chk, pyasync_what(id), pyasync_entry_name(id), value, what, bound);
}

/* A section size: non-zero and at most @cap bytes. */
static uint32_t pyasync_size(struct pyasync_check *c, enum pyaio_id id, uint64_t cap)
{
    return pycheck_size(&c->chk, pyasync_what(id), pyasync_entry_name(id), pyasync_raw(c, id), cap);
}

/* A field of @width bytes (aligned to min(width, 8)) inside a section of @size bytes. */
static uint32_t pyasync_field(struct pyasync_check *c, enum pyaio_id id, uint64_t size,
                              unsigned width)
{
    return pycheck_field(&c->chk, pyasync_what(id), pyasync_entry_name(id), pyasync_raw(c, id), 0,
                         size, width);
}

/* The generator frame-state values and what each means. */
static void pyasync_states(const struct pyasync_schema *s, struct pyasync_layout *l)
{
    const struct {
        int8_t value;
        enum pyasync_frame_state kind;
    } map[] = {
        {s->fs_created, PYASYNC_FS_CREATED},     {s->fs_suspended, PYASYNC_FS_SUSPENDED},
        {s->fs_yield_from, PYASYNC_FS_AWAITING}, {s->fs_yield_from_locked, PYASYNC_FS_AWAITING},
        {s->fs_executing, PYASYNC_FS_EXECUTING}, {s->fs_completed, PYASYNC_FS_GONE},
        {s->fs_cleared, PYASYNC_FS_GONE},
    };
    l->nfs = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(map); i++) {
        l->fs_value[l->nfs] = map[i].value;
        l->fs_kind[l->nfs++] = map[i].kind;
    }
}

enum pyasync_frame_state pyasync_frame_state(const struct pyasync_layout *l, int8_t state)
{
    for (unsigned i = 0; i < l->nfs; i++) {
        if (l->fs_value[i] == state)
            return l->fs_kind[i];
    }
    return PYASYNC_FS_GONE;
}

int pyasync_layout_load(const struct py_version *v, const struct py_layout *base, const void *debug,
                        size_t debug_len, const void *aio, size_t aio_len,
                        struct pyasync_layout *out, char *why, size_t why_len)
{
    char name[32];
    const struct pyasync_schema *s = pyasync_schema_for(v->major == 3 ? v->minor : 0);
    const struct pyabi_schema *ds = pyabi_schema_for(v->major == 3 ? v->minor : 0);
    if (!s || !ds) {
        snprintf(why, why_len, "CPython %s has no asyncio debug table",
                 pyversion_format(v, name, sizeof(name)));
        return -ENOTSUP;
    }
    if (debug_len < ds->table_size || aio_len < PYASYNC_TABLE_SIZE) {
        snprintf(why, why_len,
                 "asyncio offsets: tables of %zu and %zu bytes are shorter than %zu and %u",
                 debug_len, aio_len, ds->table_size, PYASYNC_TABLE_SIZE);
        return -EPROTO;
    }
    struct pyasync_check c = {
        .debug = debug, .aio = aio, .schema = s, .chk = {.why = why, .why_len = why_len}};
    struct pyasync_layout l = {.tag_mask = base->tag_mask,
                               .fr_size = base->fr_size,
                               .fr_executable = base->fr_executable,
                               .fr_instr_ptr = base->fr_instr_ptr,
                               .fr_owner = base->fr_owner,
                               .fr_tlbc_index = base->fr_tlbc_index,
                               .has_tlbc = base->has_tlbc,
                               .await_below_sp = s->await_below_sp};
    const unsigned P = sizeof(uint64_t);

    l.fr_stackpointer = pyasync_field(&c, PYAIO_FRAME_STACKPOINTER, base->fr_size, P);

    uint32_t ob_size = pyasync_size(&c, PYAIO_PYOBJ_SIZE, PYASYNC_MAX_OBJ);
    l.ob_type = pyasync_field(&c, PYAIO_PYOBJ_OB_TYPE, ob_size, P);
    l.tp_size = pyasync_size(&c, PYAIO_TYPE_SIZE, PYASYNC_MAX_OBJ);
    l.tp_flags = pyasync_field(&c, PYAIO_TYPE_TP_FLAGS, l.tp_size, P);
    l.set_size = pyasync_size(&c, PYAIO_SET_SIZE, PYASYNC_MAX_OBJ);
    l.set_used = pyasync_field(&c, PYAIO_SET_USED, l.set_size, P);
    l.set_table = pyasync_field(&c, PYAIO_SET_TABLE, l.set_size, P);
    l.set_mask = pyasync_field(&c, PYAIO_SET_MASK, l.set_size, P);
    l.long_size = pyasync_size(&c, PYAIO_LONG_SIZE, PYASYNC_MAX_OBJ);
    l.long_lv_tag = pyasync_field(&c, PYAIO_LONG_LV_TAG, l.long_size, P);
    l.long_ob_digit = pyasync_field(&c, PYAIO_LONG_OB_DIGIT, l.long_size, 4);

    /* a generator embeds its frame: the whole frame lies inside it */
    l.gen_size = pyasync_size(&c, PYAIO_GEN_SIZE, PYASYNC_MAX_GEN);
    l.gen_iframe = pyasync_field(&c, PYAIO_GEN_IFRAME, l.gen_size, base->fr_size);
    l.gen_frame_state = pyasync_field(&c, PYAIO_GEN_FRAME_STATE, l.gen_size, 1);
    l.llist_next = pyasync_field(&c, PYAIO_LLIST_NEXT, PYASYNC_LLIST_NODE, P);

    l.task_size = pyasync_size(&c, PYAIO_TASK_SIZE, PYASYNC_MAX_TASK);
    l.task_name = pyasync_field(&c, PYAIO_TASK_NAME, l.task_size, P);
    l.task_awaited_by = pyasync_field(&c, PYAIO_TASK_AWAITED_BY, l.task_size, P);
    l.task_is_task = pyasync_field(&c, PYAIO_TASK_IS_TASK, l.task_size, 1);
    l.task_awaited_by_is_set = pyasync_field(&c, PYAIO_TASK_AWAITED_BY_IS_SET, l.task_size, 1);
    l.task_coro = pyasync_field(&c, PYAIO_TASK_CORO, l.task_size, P);
    l.task_node = pyasync_field(&c, PYAIO_TASK_NODE, l.task_size, PYASYNC_LLIST_NODE);

    uint32_t in_size = pyasync_size(&c, PYAIO_INTERP_SIZE, PYABI_MAX_INTERP);
    l.in_tasks_head = pyasync_field(&c, PYAIO_INTERP_TASKS_HEAD, in_size, PYASYNC_LLIST_NODE);

    /* the implementation's thread state extends the public one */
    l.ts_size = pyasync_size(&c, PYAIO_TSTATE_SIZE, PYABI_MAX_TSTATE);
    if (!c.chk.failed && l.ts_size < base->ts_size)
        pyasync_fail(&c, PYAIO_TSTATE_SIZE, l.ts_size, "is smaller than thread_state.size",
                     base->ts_size);
    l.ts_running_loop = pyasync_field(&c, PYAIO_TSTATE_RUNNING_LOOP, l.ts_size, P);
    l.ts_running_task = pyasync_field(&c, PYAIO_TSTATE_RUNNING_TASK, l.ts_size, P);
    l.ts_tasks_head = pyasync_field(&c, PYAIO_TSTATE_TASKS_HEAD, l.ts_size, PYASYNC_LLIST_NODE);

    if (c.chk.failed)
        return -EPROTO;
    pyasync_states(s, &l);
    *out = l;
    if (why_len)
        why[0] = '\0';
    return 0;
}
