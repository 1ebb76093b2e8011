/* SPDX-License-Identifier: MIT */
/*
 * unwind_attach.c: attach-time checks (see unwind_internal.h,
 * docs/unwinder.md). A layout comes from the target's own _Py_DebugOffsets
 * table (3.13+), validated by python/pyabi.c, or is generated from the
 * version's headers (3.9-3.12). A generated layout is checked against the
 * live process before any sample trusts it: the runtime's links from
 * interpreter to thread and back, the running frame's code object, and what
 * the binary's own type objects say of their instances. Then, from the
 * layout, the ranges in which a sample reads an interpreter, the runtime's
 * fields and a thread state. None of it runs per sample.
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "discovery/pyruntime.h"
#include "unwind/unwind_internal.h"

/*
 * A generated layout is checked against the live process before any sample
 * trusts it: the runtime's first interpreter has a thread whose state points
 * back at it, and the frame that thread runs (if any) holds a code object
 * (its type is PyCode_Type, when the binary names that) whose file name is a
 * str (PyUnicode_Type) that decodes. A runtime with no interpreter yet is
 * not checked (nothing to check against): NEEDSWORK, the check could run at
 * its first sample instead. Returns 0, or -EPROTO with "layout check
 * failed: ..." in @why, or a read error.
 */
static int unwind_check_layout(struct memread *mr, const struct pyruntime *rt,
                               const struct py_layout *l, char *why, size_t why_len)
{
    uint64_t head = 0, tstate = 0, back = 0, frame = 0, code = 0, type = 0, file = 0;
    int err = memread_read(mr, rt->raddr + l->rt_interpreters_head, &head, 8);
    if (err || head == 0)
        goto read_error;
    err = memread_read(mr, head + l->in_threads_head, &tstate, 8);
    if (err || tstate == 0)
        goto read_error;
    err = memread_read(mr, tstate + l->ts_interp, &back, 8);
    if (err)
        goto read_error;
    if (back != head) {
        snprintf(why, why_len,
                 "layout check failed: the thread state at 0x%" PRIx64
                 " names interpreter 0x%" PRIx64 ", not 0x%" PRIx64 " that lists it",
                 tstate, back, head);
        return -EPROTO;
    }
    if (l->has_cframe) {
        uint64_t cf = 0;
        if (memread_read(mr, tstate + l->ts_cframe, &cf, 8) || cf == 0 ||
            memread_read(mr, cf + l->cf_current_frame, &frame, 8))
            frame = 0;
    } else if (memread_read(mr, tstate + l->ts_current_frame, &frame, 8)) {
        frame = 0;
    }
    if (frame == 0)
        return 0; /* the thread runs no Python now: the links above must do */
    if (memread_read(mr, frame + l->fr_executable, &code, 8) || code == 0)
        return 0; /* (it moved on: a running thread's frame is not waited for) */
    code &= ~l->tag_mask;
    if (memread_read(mr, code + l->ob_type, &type, 8) == 0 && rt->code_type &&
        type != rt->code_type) {
        snprintf(why, why_len,
                 "layout check failed: the running frame's code object at 0x%" PRIx64
                 " has type 0x%" PRIx64 ", not PyCode_Type (0x%" PRIx64 ")",
                 code, type, rt->code_type);
        return -EPROTO;
    }
    if (memread_read(mr, code + l->co_filename, &file, 8) == 0 && file && rt->unicode_type &&
        (memread_read(mr, file + l->ob_type, &type, 8) != 0 || type != rt->unicode_type)) {
        snprintf(why, why_len,
                 "layout check failed: the code object at 0x%" PRIx64
                 " has no str where its file name should be",
                 code);
        return -EPROTO;
    }
    return 0;
read_error:
    if (err == -ESRCH || err == -EPERM) {
        snprintf(why, why_len, "cannot read the runtime: %s", memread_strerror(err));
        return err;
    }
    return 0; /* not running Python yet (no interpreter or thread): nothing to check */
}

#define UNWIND_MEMBERS_MAX 48u /* PyMemberDef entries read of one type */
#define UNWIND_MEMBER_NAME 24u /* bytes of a member's name read */

/* A member a type's table should list, at the offset the layout has. */
struct unwind_member_want {
    const char *name;
    uint32_t offset;
};

/*
 * The type object at @type describes its instances itself: its tp_basicsize
 * must be @basicsize (0: not compared), and every member of its PyMemberDef
 * table named in @want must sit at the offset the layout has for it.
 * Returns the number of members that agreed, or -EPROTO with "layout check
 * failed: ..." in @why. A table that cannot be read is not compared (0).
 */
static int unwind_check_members(struct memread *mr, uint64_t type, const char *type_name,
                                uint64_t basicsize, const struct unwind_member_want *want,
                                size_t nwant, char *why, size_t why_len)
{
    uint64_t size = 0, members = 0;
    struct memread_iov hdr[2] = {{type + PYABI_TYPE_BASICSIZE, &size, 8},
                                 {type + PYABI_TYPE_MEMBERS, &members, 8}};
    if (memread_readv(mr, hdr, 2) != 0)
        return 0;
    size = load_le64((const uint8_t *)&size);
    members = load_le64((const uint8_t *)&members);
    if (basicsize && size != basicsize) {
        snprintf(why, why_len,
                 "layout check failed: %s says its objects are %" PRIu64
                 " bytes, the generated layout %" PRIu64,
                 type_name, size, basicsize);
        return -EPROTO;
    }
    uint8_t table[UNWIND_MEMBERS_MAX * PYABI_MEMBERDEF_SIZE];
    size_t n = UNWIND_MEMBERS_MAX;
    /* the table may end near the end of its mapping: fewer entries then */
    while (members && n >= 8 && memread_read(mr, members, table, n * PYABI_MEMBERDEF_SIZE) != 0)
        n /= 2;
    if (!members || n < 8)
        return 0;
    char names[UNWIND_MEMBERS_MAX][UNWIND_MEMBER_NAME] = {{0}};
    struct memread_iov iov[UNWIND_MEMBERS_MAX];
    size_t count = 0;
    for (; count < n; count++) {
        uint64_t name = load_le64(table + count * PYABI_MEMBERDEF_SIZE);
        if (!name)
            break;
        iov[count] = (struct memread_iov){name, names[count], UNWIND_MEMBER_NAME};
    }
    /* names near the end of a mapping: one by one, shorter */
    if (count && memread_readv(mr, iov, count) != 0) {
        for (size_t i = 0; i < count; i++) {
            if (memread_read(mr, iov[i].raddr, names[i], 12) != 0)
                names[i][0] = '\0';
            names[i][11] = '\0';
        }
    }
    int agreed = 0;
    for (size_t i = 0; i < count; i++) {
        names[i][UNWIND_MEMBER_NAME - 1] = '\0';
        uint64_t off = load_le64(table + i * PYABI_MEMBERDEF_SIZE + PYABI_MEMBERDEF_OFF);
        for (size_t k = 0; k < nwant; k++) {
            if (strcmp(names[i], want[k].name) != 0)
                continue;
            if (off != want[k].offset) {
                snprintf(why, why_len,
                         "layout check failed: %s says %s is at %" PRIu64
                         ", the generated layout at %" PRIu32,
                         type_name, want[k].name, off, want[k].offset);
                return -EPROTO;
            }
            agreed++;
        }
    }
    return agreed;
}

/*
 * What the running binary says of its own layout (a generated one), where
 * it says it: PyCode_Type's instance size and member offsets, and on 3.9 and
 * 3.10 PyFrame_Type's. Returns the number of offsets that agreed, or
 * -EPROTO (@why says which did not).
 */
static int unwind_check_types(struct memread *mr, const struct pyruntime *rt,
                              const struct py_layout *l, char *why, size_t why_len)
{
    const struct unwind_member_want code[] = {
        {"co_filename", l->co_filename},
        {"co_name", l->co_name},
        {"co_firstlineno", l->co_firstlineno},
        {l->lines == PYABI_LINES_LNOTAB ? "co_lnotab" : "co_linetable", l->co_linetable},
        {l->frame_objects ? "" : "co_qualname", l->co_qualname},
    };
    int agreed = 0, n;
    if (rt->code_type) {
        /* 3.11+: the instance ends where the bytecode starts */
        n = unwind_check_members(mr, rt->code_type, "PyCode_Type",
                                 l->frame_objects ? l->co_size : l->co_adaptive, code,
                                 PYPROFD_ARRAY_SIZE(code), why, why_len);
        if (n < 0)
            return n;
        agreed += n;
    }
    if (rt->frame_type && l->frame_objects) {
        const struct unwind_member_want frame[] = {
            {"f_back", l->fr_previous},
            {"f_code", l->fr_executable},
            {"f_lasti", l->fr_instr_ptr},
        };
        n = unwind_check_members(mr, rt->frame_type, "PyFrame_Type", l->fo_size, frame,
                                 PYPROFD_ARRAY_SIZE(frame), why, why_len);
        if (n < 0)
            return n;
        agreed += n;
    }
    return agreed;
}

int unwind_attach_layout(struct memread *mr, const struct pyruntime *rt, struct py_layout *out,
                         char *why, size_t why_len)
{
    uint8_t table[PYABI_MAX_TABLE];
    int err;
    if (rt->no_table) {
        /* 3.11, 3.12: a layout generated from the version's headers */
        err = pyabi_layout_generated(
            &rt->version, pyabi_generated_for(rt->version.major == 3 ? rt->version.minor : 0), out,
            why, why_len);
        if (err)
            return err;
    } else {
        const struct pyabi_schema *schema =
            pyabi_schema_for(rt->version.major == 3 ? rt->version.minor : 0);
        size_t table_len = schema ? schema->table_size : PYVERSION_HEADER_SIZE;
        if (table_len > rt->section_size) {
            snprintf(why, why_len,
                     "debug offsets: .PyRuntime (%" PRIu64 " bytes) is smaller than the table",
                     rt->section_size);
            return -EPROTO;
        }
        err = memread_read(mr, rt->raddr, table, table_len);
        if (err) {
            snprintf(why, why_len, "cannot read the debug offsets table: %s",
                     memread_strerror(err));
            return err;
        }
        err = pyabi_layout_load(&rt->version, table, table_len, out, why, why_len);
        if (err)
            return err;
    }
    /* a layout not from the target is checked against it first; a running
     * thread can move between the reads, so only three failures in a row
     * refuse it */
    for (int tries = 0; rt->no_table && tries < 3; tries++) {
        err = unwind_check_layout(mr, rt, out, why, why_len);
        if (err != -EPROTO)
            break;
    }
    if (rt->no_table && err)
        return err;
    if (rt->no_table) {
        int agreed = unwind_check_types(mr, rt, out, why, why_len);
        if (agreed < 0)
            return agreed;
        out->members_agreed = (unsigned)agreed;
    }
    return 0;
}

/*
 * Decides whether the interpreter fields a sample needs fit one small range,
 * and the runtime's; and how much of a thread state a sample reads.
 */
void unwind_interp_span(struct unwinder *u)
{
    const struct py_layout *l = &u->l;
    uint32_t off[] = {l->in_id,
                      l->in_next,
                      l->in_threads_head,
                      l->in_threads_main,
                      l->in_gil_holder,
                      l->in_gc_collecting,
                      l->in_gil_locked,
                      l->has_gc_frame ? l->in_gc_frame : l->in_id,
                      l->has_code_generation ? l->in_code_generation : l->in_id,
                      l->has_tlbc ? l->in_tlbc_generation : l->in_id};
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(off); i++) {
        lo = off[i] < lo ? off[i] : lo;
        hi = off[i] + 8 > hi ? off[i] + 8 : hi;
    }
    u->in_lo = lo;
    u->in_span = hi - lo <= UNWIND_INTERP_SPAN ? hi - lo : 0;

    uint32_t a = l->rt_interpreters_head, b = l->rt_finalizing;
    u->rt_lo = a < b ? a : b;
    u->rt_span = (a > b ? a : b) + 8 - u->rt_lo;
    if (u->rt_span > UNWIND_RUNTIME_SPAN)
        u->rt_span = 0;

    /* Only the start of a thread state holds what a sample uses (the kernel
     * pins every page a range touches): read up to the last such field. */
    struct {
        uint32_t off, width;
    } ts[] = {{l->ts_next, 8},
              {l->ts_current_frame, 8},
              {l->has_base_frame ? l->ts_base_frame : 0, 8},
              {l->ts_thread_id, 8},
              {l->ts_native_thread_id, 8},
              {l->ts_datastack_chunk, 8},
              {l->holds_gil_kind == PYABI_GIL_INT ? l->ts_holds_gil : l->ts_status, 4},
              {l->has_gil_requested ? l->ts_gil_requested : 0, 4},
              {l->ts_current_exception, 8},
              {l->ts_exc_info, 8},
              {l->ts_exc_value, 8}};
    size_t end = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(ts); i++)
        end = ts[i].off + ts[i].width > end ? ts[i].off + ts[i].width : end;
    u->ts_read_len = end < l->ts_size ? end : l->ts_size;
    u->ts_base_len = u->ts_read_len;
}
