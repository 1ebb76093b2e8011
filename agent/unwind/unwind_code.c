/* SPDX-License-Identifier: MIT */
/*
 * unwind_code.c: code objects (see unwind_internal.h, docs/unwinder.md).
 *
 * The resolve phase of a sample: raw frames become names and positions
 * through the code cache (unwind/codecache.h), reading only the code objects
 * it has not seen. A frame slot resolved from the same raw frame under the
 * same cache epoch is kept as it is. The cache is invalidated by the
 * interpreter's code_object_generation (3.14+, checked in unwind.c) or, on
 * 3.13, by re-reading this sample's cached code objects (most of them came
 * with the thread's read) and dropping those whose fields changed. Also
 * here: the code cache as the asyncio walker uses it (unwinder_resolve_code())
 * and the opcodes of UNWIND_OPCODES.
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "base/hash.h"
#include "python/pyopcode.h"
#include "unwind/codecache.h"
#include "unwind/pystr.h"
#include "unwind/unwind_internal.h"

static const char unwind_native_name[] = "<native>";
static const char unwind_gc_name[] = "<GC>";
static const char unwind_unreadable_name[] = "<unreadable frame>";
static const char unwind_unknown_function[] = "<unknown function>";
static const char unwind_unknown_file[] = "<unknown file>";
static const char unwind_marker_file[] = "~";

/* Code ids (unwind_frame.code_id) of the frames that are not code objects. */
#define UNWIND_ID_NATIVE     1u
#define UNWIND_ID_GC         2u
#define UNWIND_ID_UNREADABLE 3u

/* Reads the code object at @raddr into the cache. NULL when unreadable. */
static struct code_info *unwind_fetch_code(struct unwinder *u, uint64_t raddr)
{
    const struct py_layout *l = &u->l;
    if (memread_read(u->mr, raddr, u->code_buf, l->co_read_len))
        return NULL;
    struct code_info ci = {
        .raddr = raddr,
        .qualname = unwind_unknown_function,
        .filename = unwind_unknown_file,
        .qualname_raddr = load_le64(u->code_buf + l->co_qualname),
        .filename_raddr = load_le64(u->code_buf + l->co_filename),
        .linetable_raddr = load_le64(u->code_buf + l->co_linetable),
        .bytecode_raddr = raddr + l->co_adaptive,
        .lines = l->lines,
    };
    ci.firstlineno = (int32_t)load_le32(u->code_buf + l->co_firstlineno);
    if (pystr_read(u->mr, l, ci.qualname_raddr, u->name_buf, sizeof(u->name_buf)) >= 0)
        ci.qualname = u->name_buf;
    if (pystr_read(u->mr, l, ci.filename_raddr, u->file_buf, sizeof(u->file_buf)) >= 0)
        ci.filename = u->file_buf;
    long n = pybytes_read(u->mr, l, ci.linetable_raddr, u->sc->linetable_buf, UNWIND_LINETABLE_MAX);
    /* an empty table too (3.9 leaves co_lnotab empty when every instruction
     * is on co_firstlineno: a lambda, a one-line function) */
    if (n >= 0) {
        ci.linetable = u->sc->linetable_buf;
        ci.linetable_len = (size_t)n;
    }
    return codecache_insert(u->codes, &ci);
}

/* Whether the code-object bytes at @b still hold what @ci cached. */
static bool unwind_code_holds(const struct unwinder *u, const struct code_info *ci,
                              const uint8_t *b)
{
    const struct py_layout *l = &u->l;
    return load_le64(b + l->co_qualname) == ci->qualname_raddr &&
           load_le64(b + l->co_filename) == ci->filename_raddr &&
           load_le64(b + l->co_linetable) == ci->linetable_raddr &&
           (int32_t)load_le32(b + l->co_firstlineno) == ci->firstlineno;
}

/*
 * 3.13 has no code_object_generation: every cached code object this sample
 * uses is read again and entries whose fields changed are dropped. Those the
 * thread's last sample used came with the thread state (pre_addr/pre_buf,
 * the same moment as its frames); the rest are read in one batched call.
 */
void unwind_recheck_codes(struct unwinder *u, size_t from)
{
    const struct py_layout *l = &u->l;
    size_t n = 0, next_pre = 0;
    uint64_t last = 0;
    struct memread_iov iov[MEMREAD_MAX_IOV];
    for (size_t i = from; i < u->nframes && n < MEMREAD_MAX_IOV; i++) {
        uint64_t code = u->raw[i].code_raddr;
        if (u->raw[i].kind != UNWIND_FRAME_PYTHON || code == last)
            continue;
        last = code;
        struct code_info *ci = codecache_find(u->codes, code);
        if (!ci || ci->qualname_raddr == 0)
            continue;
        /* read with the thread? (mostly in the same order as last time) */
        size_t k = 0;
        for (; k < u->npre; k++) {
            size_t j = (next_pre + k) % u->npre;
            if (u->pre_addr[j] == code) {
                next_pre = j + 1;
                break;
            }
        }
        if (k < u->npre) {
            if (!unwind_code_holds(u, ci, u->pre_buf + (next_pre - 1) * l->co_read_len)) {
                ci->qualname_raddr = 0; /* stale: refetched on use */
                u->resolve_epoch++;
            }
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = u->sc->check_addr[j] == code;
        if (dup)
            continue;
        u->sc->check_addr[n] = code;
        iov[n] = (struct memread_iov){code, u->sc->check_buf + n * l->co_read_len, l->co_read_len};
        n++;
    }
    if (n == 0)
        return;
    bool ok = memread_readv(u->mr, iov, n) == 0;
    for (size_t j = 0; j < n; j++) {
        struct code_info *ci = codecache_find(u->codes, u->sc->check_addr[j]);
        if (!ok || !unwind_code_holds(u, ci, u->sc->check_buf + j * l->co_read_len)) {
            ci->qualname_raddr = 0; /* stale: refetched on use */
            u->resolve_epoch++;
        }
    }
}

/* 3.13: remembers the distinct code objects of the thread's frames
 * [from, u->nframes), for the re-check with its next read. */
void unwind_remember_codes(struct unwinder *u, size_t from)
{
    if (!u->guess_codes)
        return;
    uint64_t *codes = u->guess_codes + unwind_slot(u->tstate_raddr) * UNWIND_GUESS_CODES;
    size_t n = 0;
    for (size_t i = from; i < u->nframes && n < UNWIND_GUESS_CODES; i++) {
        uint64_t code = u->raw[i].code_raddr;
        if (u->raw[i].kind != UNWIND_FRAME_PYTHON)
            continue;
        /* recursion repeats nearby: a farther repeat costs a range, not a
         * wrong answer */
        bool dup = false;
        for (size_t j = n; j > 0 && j + 8 > n && !dup; j--)
            dup = codes[j - 1] == code;
        if (!dup)
            codes[n++] = code;
    }
    if (n < UNWIND_GUESS_CODES)
        codes[n] = 0;
}

/* The code-cache epoch: resolved names stay valid while it holds. */
static uint64_t unwind_epoch(const struct unwinder *u)
{
    return u->resolve_epoch + codecache_overflows(u->codes);
}

/*
 * Start of copy @index of the bytecode of the code object at @code
 * (free-threaded 3.14+): code->co_tlbc points at {ssize_t n; void *entry[n]}.
 * Cached per epoch; 0 when it cannot be read or is not there.
 */
static uint64_t unwind_tlbc_base(struct unwinder *u, uint64_t code, uint32_t index)
{
    uint64_t epoch = unwind_epoch(u);
    struct tlbc_slot *s = &u->tlbc[hash_fmix64(code * HASH_GOLDEN + index) % UNWIND_TLBC_SLOTS];
    if (s->epoch == epoch && s->code == code && s->index == index)
        return s->base;
    uint64_t arr = 0, n = 0, base = 0;
    if (memread_read(u->mr, code + u->l.co_tlbc, &arr, 8) == 0 && arr &&
        memread_read(u->mr, arr, &n, 8) == 0 && n > index && n <= PYABI_MAX_TLBC &&
        memread_read(u->mr, arr + 8 + 8 * (uint64_t)index, &base, 8) != 0)
        base = 0;
    *s = (struct tlbc_slot){.code = code, .base = base, .epoch = epoch, .index = index};
    return base;
}

/* Resolves one raw frame into @f; false when its code object is unreadable. */
static bool unwind_resolve_one(struct unwinder *u, const struct raw_frame *r,
                               struct unwind_frame *f)
{
    f->kind = r->kind;
    f->code_raddr = r->code_raddr;
    f->opname = f->opbase = f->opmarker = NULL;
    f->opcode = 0;
    f->first_line = 0;
    f->file = unwind_marker_file;
    f->pos = (struct linetable_pos){LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
                                    LINETABLE_UNKNOWN};
    if (r->kind == UNWIND_FRAME_NATIVE) {
        f->function = unwind_native_name;
        f->code_id = UNWIND_ID_NATIVE;
        return true;
    }
    if (r->kind == UNWIND_FRAME_GC) {
        f->function = unwind_gc_name;
        f->code_id = UNWIND_ID_GC;
        return true;
    }
    struct code_info *ci = codecache_find(u->codes, r->code_raddr);
    if (!ci || ci->qualname_raddr == 0)
        ci = unwind_fetch_code(u, r->code_raddr);
    if (!ci) {
        f->kind = UNWIND_FRAME_UNREADABLE;
        f->function = unwind_unreadable_name;
        f->file = unwind_unknown_file;
        f->code_id = UNWIND_ID_UNREADABLE;
        return false;
    }
    f->function = ci->qualname;
    f->file = ci->filename;
    f->first_line = ci->firstlineno;
    f->code_id = ci->id;
    if (u->l.frame_objects) {
        /* <= 3.10: f_lasti, an offset; -1 before the first instruction,
         * where CPython reports the first line */
        int32_t lasti = (int32_t)r->instr_ptr;
        struct linetable_pos pos;
        if (lasti < 0)
            f->pos = (struct linetable_pos){ci->firstlineno, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
                                            LINETABLE_UNKNOWN};
        else if (codecache_position(ci, (uint32_t)lasti * u->l.lasti_scale, &pos) == 0)
            f->pos = pos;
        return true;
    }
    uint64_t bytecode = r->tlbc ? unwind_tlbc_base(u, r->code_raddr, r->tlbc) : ci->bytecode_raddr;
    /* 3.11/3.12: a frame that has not run its first instruction points just
     * before it (prev_instr); it is at its first line */
    uint64_t ip = bytecode && r->instr_ptr + 2 == bytecode ? bytecode : r->instr_ptr;
    if (bytecode && ip >= bytecode && (ip - bytecode) / 2 <= UINT32_MAX) {
        struct linetable_pos pos;
        if (codecache_position(ci, (uint32_t)((ip - bytecode) / 2), &pos) == 0)
            f->pos = pos;
    }
    return true;
}

/*
 * Resolves frames [from, u->nframes). A frame slot that was resolved from the
 * same raw frame under the current code-cache epoch is kept as it is (a
 * stack whose leaf moved costs one frame, not all). Returns true when every
 * frame was kept and had last been written or kept by resolve @prev_serial;
 * *@serial is this call's number.
 */
bool unwind_resolve(struct unwinder *u, size_t from, uint64_t prev_serial, uint64_t *serial)
{
    uint64_t me = ++u->resolve_serial;
    uint64_t epoch = unwind_epoch(u);
    bool kept = true;
    for (size_t i = from; i < u->nframes; i++) {
        const struct raw_frame *r = &u->raw[i];
        struct unwind_frame *f = &u->frames[i];
        struct resolved_tag *tag = &u->tags[i];
        f->frame_raddr = r->frame_raddr; /* not part of what is resolved */
        if (tag->epoch == epoch && tag->ip == r->instr_ptr && tag->kind == r->kind &&
            f->code_raddr == r->code_raddr && tag->tlbc == r->tlbc) {
            kept = kept && tag->serial == prev_serial;
            tag->serial = me;
            continue;
        }
        kept = false;
        bool readable = unwind_resolve_one(u, r, f);
        /* the epoch after the lookup: an insert may have cleared the cache,
         * which leaves frames resolved before it stale, not this one. An
         * unreadable code object is tried again next time. */
        epoch = unwind_epoch(u);
        *tag = (struct resolved_tag){.ip = r->instr_ptr,
                                     .epoch = readable ? epoch : 0,
                                     .serial = me,
                                     .kind = r->kind,
                                     .tlbc = r->tlbc};
    }
    *serial = me;
    return kept;
}

/*
 * UNWIND_OPCODES: reads the code unit at each Python frame's instr_ptr (one
 * batched read per MEMREAD_MAX_IOV frames) and names its low byte, the
 * opcode, from the version's table. A frame whose unit cannot be read, or
 * whose opcode the table does not know, has none. Returns whether any
 * frame's opcode differs from what its slot held (a kept stack whose
 * instruction was specialized in place is not unchanged).
 */
bool unwind_read_opcodes(struct unwinder *u, size_t first)
{
    bool changed = false;
    struct memread_iov iov[MEMREAD_MAX_IOV];
    uint16_t unit[MEMREAD_MAX_IOV];
    size_t at[MEMREAD_MAX_IOV];
    for (size_t i = first; i < u->nframes;) {
        size_t n = 0;
        for (; i < u->nframes && n < MEMREAD_MAX_IOV; i++) {
            const struct raw_frame *r = &u->raw[i];
            if (r->kind != UNWIND_FRAME_PYTHON || !r->instr_ptr) {
                changed |= u->frames[i].opname != NULL;
                u->frames[i].opname = u->frames[i].opbase = u->frames[i].opmarker = NULL;
                continue;
            }
            iov[n] = (struct memread_iov){r->instr_ptr, &unit[n], 2};
            at[n++] = i;
        }
        bool ok = n && memread_readv(u->mr, iov, n) == 0;
        for (size_t k = 0; k < n; k++) {
            struct unwind_frame *f = &u->frames[at[k]];
            uint8_t op = (uint8_t)(load_le16((const uint8_t *)&unit[k]) & 0xff);
            const char *const *row =
                ok && u->optable && u->optable[op][PYOPCODE_NAME] ? u->optable[op] : NULL;
            const char *name = row ? row[PYOPCODE_NAME] : NULL;
            changed |= f->opname != name || f->opcode != op;
            f->opname = name;
            f->opbase = row ? row[PYOPCODE_BASE] : NULL;
            f->opmarker = row ? row[PYOPCODE_MARKER] : NULL;
            f->opcode = op;
        }
    }
    return changed;
}

uint64_t unwinder_code_epoch(const struct unwinder *u)
{
    return unwind_epoch(u);
}

bool unwinder_resolve_again(struct unwinder *u)
{
    uint64_t overflows = codecache_overflows(u->codes);
    uint64_t serial;
    (void)unwind_resolve(u, 0, 0, &serial);
    for (size_t i = 0; i < u->result.nthreads; i++) {
        u->threads[i].unchanged = false;
        u->threads[i].stack_key = ++u->last_key;
    }
    for (size_t slot = 0; slot < UNWIND_CHUNK_GUESSES; slot++)
        u->resolved[slot].tstate_raddr = 0;
    return codecache_overflows(u->codes) == overflows;
}

bool unwinder_resolve_code(struct unwinder *u, uint64_t code_raddr, uint64_t instr_ptr,
                           uint32_t tlbc, struct unwind_frame *f)
{
    struct raw_frame r = {code_raddr, instr_ptr, UNWIND_FRAME_PYTHON, 0, tlbc};
    f->frame_raddr = 0;
    return unwind_resolve_one(u, &r, f);
}
