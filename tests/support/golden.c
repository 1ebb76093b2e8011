/* SPDX-License-Identifier: MIT */
/*
 * golden.c: golden text of unwinder results (see golden.h).
 */
#include "base/compat.h"

#include "golden.h"

static void golden_pos(FILE *out, int32_t v)
{
    if (v == LINETABLE_UNKNOWN)
        fputs(" -", out);
    else
        fprintf(out, " %d", v);
}

void golden_write(const struct unwind_result *r, FILE *out)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *t = &r->threads[i];
        fprintf(out, "thread %" PRIu64 "%s%s%s%s status=%s\n", t->native_thread_id,
                t->flags & UNWIND_THREAD_MAIN ? " main" : "",
                t->flags & UNWIND_THREAD_HOLDS_GIL ? " holds_gil" : "",
                t->flags & UNWIND_THREAD_GIL_REQUESTED ? " gil_requested" : "",
                t->flags & UNWIND_THREAD_HAS_EXCEPTION ? " has_exception" : "",
                status_name(t->status));
        for (size_t k = 0; k < t->nframes; k++) {
            const struct unwind_frame *f = &t->frames[k];
            fprintf(out, "  %s %s", f->function, f->file);
            golden_pos(out, f->pos.line);
            golden_pos(out, f->pos.end_line);
            golden_pos(out, f->pos.col);
            golden_pos(out, f->pos.end_col);
            fputc('\n', out);
        }
    }
}
