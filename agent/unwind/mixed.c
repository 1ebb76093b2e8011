/* SPDX-License-Identifier: MIT */
/*
 * mixed.c: C and Python frames of one thread joined at the evaluation loops'
 * entry frames (see mixed.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "unwind/mixed.h"

#define MIXED_NAME_MAX   160u
#define MIXED_MAX_FRAMES (UNWIND_MAX_DEPTH + NATIVE_MAX_FRAMES + 1u)

static const char mixed_native_name[] = "<native>";

struct mixed {
    struct unwind_frame frames[MIXED_MAX_FRAMES];
    char names[NATIVE_MAX_FRAMES][MIXED_NAME_MAX];
    /* for each entry marker of the Python stack (innermost first): the C
     * frame it falls in */
    size_t loop_of[UNWIND_MAX_DEPTH];
};

int mixed_new(struct mixed **out)
{
    *out = alloc_calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

void mixed_free(struct mixed *m)
{
    alloc_free(m);
}

static const char *mixed_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *mixed_c_name(const struct native_frame *f, char *buf, size_t size)
{
    if (f->function)
        return f->function;
    if (f->file)
        snprintf(buf, size, "%s+0x%" PRIx64, mixed_basename(f->file),
                 f->start_offset ? f->start_offset : f->file_offset);
    else
        snprintf(buf, size, "0x%" PRIx64, f->pc);
    return buf;
}

static bool mixed_is_entry(const struct unwind_frame *f)
{
    return f->kind == UNWIND_FRAME_NATIVE;
}

/* Appends C frame @i of @c. */
static void mixed_put_c(struct mixed *m, size_t *n, const struct native_frame *c, size_t i)
{
    const struct native_frame *f = &c[i];
    struct unwind_frame *o = &m->frames[(*n)++];
    *o = (struct unwind_frame){
        .kind = UNWIND_FRAME_C,
        .function = mixed_c_name(f, m->names[i], MIXED_NAME_MAX),
        .file = f->file ? f->file : "~",
        .pos = {LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN},
        .pc = f->pc,
        .mapping = f->mapping};
}

static void mixed_put_marker(struct mixed *m, size_t *n)
{
    m->frames[(*n)++] = (struct unwind_frame){
        .kind = UNWIND_FRAME_NATIVE,
        .function = mixed_native_name,
        .file = "~",
        .pos = {LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN}};
}

/*
 * The C frame of @c whose own stack holds @addr: frame i spans [sp_i,
 * sp_i+1). Returns its index, @nc when @addr is at or past the last frame's
 * stack pointer (beyond what was unwound), or -1 when it is below the
 * leaf's (not on the sampled stack at all).
 */
static ptrdiff_t mixed_frame_of(const struct native_frame *c, size_t nc, uint64_t addr)
{
    if (addr < c[0].sp)
        return -1;
    for (size_t i = 0; i + 1 < nc; i++) {
        if (c[i + 1].sp <= c[i].sp)
            return -1; /* a stack that does not grow up: no trustworthy ranges */
        if (addr < c[i + 1].sp)
            return (ptrdiff_t)i;
    }
    return (ptrdiff_t)nc;
}

/*
 * The evaluation loop's C frame by its exported symbol: how the loops are
 * found where the entry frames are not on the C stack (3.9-3.11).
 */
static bool mixed_is_loop(const struct native_frame *f)
{
    return f->function && strcmp(f->function, "_PyEval_EvalFrameDefault") == 0;
}

/*
 * Whether Python frame @f ends a stretch that one evaluation loop runs:
 * its entry marker (3.11+), or, with none in the stack (3.9, 3.10: each
 * frame object has its own loop), every frame that is not a marker.
 */
static bool mixed_ends_stretch(const struct unwind_frame *f, bool per_frame)
{
    return per_frame ? f->kind == UNWIND_FRAME_PYTHON || f->kind == UNWIND_FRAME_UNREADABLE
                     : mixed_is_entry(f);
}

/* 3.12+: each entry frame lies in its loop's C frame. Fills loop_of; returns false to disagree. */
static bool mixed_place_by_address(struct mixed *m, const struct native_frame *c, size_t nc,
                                   const struct unwind_frame *py, size_t npy, size_t *entries)
{
    ptrdiff_t prev = -1;
    for (size_t i = 0; i < npy; i++) {
        if (!mixed_is_entry(&py[i]))
            continue;
        if (!py[i].frame_raddr || !nc)
            return false;
        ptrdiff_t at = mixed_frame_of(c, nc, py[i].frame_raddr);
        if (at < 0 || (at <= prev && at != (ptrdiff_t)nc))
            return false; /* off the sampled stack, or two loops in one frame */
        m->loop_of[(*entries)++] = (size_t)at;
        prev = at;
    }
    return true;
}

/*
 * 3.9-3.11: the loops are the C frames named _PyEval_EvalFrameDefault, one
 * per stretch, innermost first, as many as there are stretches: a stretch
 * beyond the last C frame is cut there when the unwinding stopped short of
 * the outermost frame (@c_complete false); any other difference in number
 * is a disagreement. Fills loop_of; returns false to disagree.
 */
static bool mixed_place_by_symbol(struct mixed *m, const struct native_frame *c, size_t nc,
                                  bool c_complete, const struct unwind_frame *py, size_t npy,
                                  bool per_frame, size_t *entries)
{
    size_t k = 0;
    for (size_t i = 0; i < npy; i++) {
        if (!mixed_ends_stretch(&py[i], per_frame))
            continue;
        if (!per_frame && py[i].frame_raddr)
            return false; /* entry frames of both kinds: not one interpreter's */
        while (k < nc && !mixed_is_loop(&c[k]))
            k++;
        if (k == nc && c_complete)
            return false; /* the C stack has fewer loops than the Python one stretches */
        m->loop_of[(*entries)++] = k;
        if (k < nc)
            k++;
    }
    for (; k < nc; k++) {
        if (mixed_is_loop(&c[k]))
            return false; /* ... or more */
    }
    return true;
}

enum mixed_result mixed_merge(struct mixed *m, const struct native_frame *c, size_t nc,
                              bool c_complete, const struct unwind_frame *py, size_t npy,
                              const struct unwind_frame **out, size_t *nout)
{
    if (nc > NATIVE_MAX_FRAMES || npy > UNWIND_MAX_DEPTH)
        return MIXED_DISAGREE;
    /* where each stretch's loop is among the C frames, checked first */
    size_t entries = 0, markers = 0, first = npy;
    for (size_t i = 0; i < npy; i++) {
        if (mixed_is_entry(&py[i]) && markers++ == 0)
            first = i;
    }
    bool per_frame = false;
    if (npy && markers && py[first].frame_raddr) {
        if (!mixed_place_by_address(m, c, nc, py, npy, &entries))
            return MIXED_DISAGREE;
    } else if (npy) {
        bool any = false;
        for (size_t i = 0; i < nc && !any; i++)
            any = mixed_is_loop(&c[i]);
        /*
         * No loop among the C frames. When they reach the outermost frame,
         * the build does not name its loop: nothing to join at. When they
         * stop short (a C stack deeper than the copy or than
         * NATIVE_MAX_FRAMES: a C extension recursing), every loop lies
         * beyond them: the stack is cut before the first, as the entry
         * frames' addresses cut it from 3.12 on (issue 37: the C frames
         * were all dropped, the leaf's with them).
         */
        if (!any && (c_complete || nc == 0))
            return nc ? MIXED_NO_ENTRY : MIXED_DISAGREE;
        per_frame = markers == 0;
        if (!mixed_place_by_symbol(m, c, nc, c_complete, py, npy, per_frame, &entries))
            return MIXED_DISAGREE;
    }
    /* then joined, leaf first */
    size_t n = 0, ci = 0, pi = 0;
    bool cut = false;
    for (size_t e = 0; e < entries; e++) {
        size_t loop = m->loop_of[e];
        if (loop == nc) { /* the C frames end before this loop: the rest is Python */
            cut = true;
            break;
        }
        while (ci < loop)
            mixed_put_c(m, &n, c, ci++);
        ci++; /* the loop itself: its Python frames take its place */
        while (pi < npy && !mixed_ends_stretch(&py[pi], per_frame))
            m->frames[n++] = py[pi++];
        if (per_frame && pi < npy)
            m->frames[n++] = py[pi]; /* the frame is its stretch */
        pi++;                        /* (an entry marker is not shown) */
    }
    while (ci < nc)
        mixed_put_c(m, &n, c, ci++);
    if (cut || pi < npy) {
        /* Python frames the C frames did not reach (or, with no entry frame
         * at all, a Python stack with none: it cannot be placed) */
        if (entries == 0)
            return MIXED_DISAGREE;
        mixed_put_marker(m, &n);
        for (; pi < npy; pi++) {
            if (mixed_is_entry(&py[pi])) {
                if (pi + 1 < npy)
                    mixed_put_marker(m, &n);
            } else {
                m->frames[n++] = py[pi];
            }
        }
        cut = true;
    }
    *out = m->frames;
    *nout = n;
    return cut ? MIXED_CUT : MIXED_OK;
}

size_t mixed_python_only(struct mixed *m, const struct unwind_frame *py, size_t npy,
                         const struct unwind_frame **out)
{
    size_t n = 0, last_entry = npy;
    if (npy > UNWIND_MAX_DEPTH)
        npy = UNWIND_MAX_DEPTH;
    for (size_t i = 0; i < npy; i++) {
        if (mixed_is_entry(&py[i]))
            last_entry = i;
    }
    for (size_t i = 0; i < npy; i++) {
        if (i == last_entry)
            continue;
        m->frames[n] = py[i];
        if (mixed_is_entry(&py[i]))
            m->frames[n].frame_raddr = 0;
        n++;
    }
    *out = m->frames;
    return n;
}
