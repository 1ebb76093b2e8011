/* SPDX-License-Identifier: MIT */
/*
 * sampler_read.c: the scheduled read (source.h, "read"): each attempt walks
 * the target's threads with the unwinder (and its asyncio task graph), reads
 * once more at once when the walk tore, counts the outcome and gives each
 * thread's stack to the sinks. The exact path (sampler_exact.c) reads the
 * same way between its stop and resume: the two steps are sampler_read_collect()
 * and sampler_read_give() (sampler_read.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "sampler/sampler_read.h"
#include "sampler/source.h"
#include "unwind/otel_sdk.h"
#include "unwind/otel_thread.h"

/* Whether an attempt failed only because something moved while it was read. */
static bool sampler_read_torn(const struct sampler_read_result *rd)
{
    if (rd->err)
        return status_torn(rd->why);
    for (size_t i = 0; rd->ar && i < rd->ar->nsamples; i++) {
        if (status_torn(rd->ar->samples[i].status))
            return true;
    }
    for (size_t i = 0; !rd->ar && i < rd->r->nthreads; i++) {
        if (status_torn(rd->r->threads[i].status))
            return true;
    }
    return false;
}

/*
 * A stack or task graph that changed while it was read (a torn read) is
 * read again at once, one time: the second read almost always holds, and a
 * failed attempt would leave its moment out of the profile, more often for
 * code whose stacks change fast. The retry costs a second walk only when the
 * first tore; it is counted (retried).
 */
void sampler_read_collect(struct sampler *s, unsigned extra_flags, struct sampler_read_result *rd)
{
    const struct sampler_opts *o = sampler_opts_of(s);
    *rd = (struct sampler_read_result){.why = SAMPLE_OK};
    for (int attempt = 0; attempt < 2; attempt++) {
        rd->ar = NULL;
        rd->gone = false;
        rd->err = unwinder_sample(sampler_unwinder(s), sampler_unwind_flags(s, extra_flags), &rd->r,
                                  &rd->why);
        /* the task graph is read while the threads are still stopped */
        if (!rd->err && o->async)
            rd->gone = asyncio_sample(o->async, rd->r, &rd->ar) == -ESRCH;
        if (attempt > 0 || rd->gone || !sampler_read_torn(rd))
            break;
        sampler_tally(s)->retried++;
    }
    /* the trace context, once the stacks hold (with the threads still
     * stopped on the exact path) */
    struct otel_thread *tctx = sampler_trace_context(s);
    if (!rd->err && !rd->gone && tctx)
        rd->spans = otel_thread_sample(tctx, rd->r);
    /* the SDK's own context where no published one says */
    struct otel_sdk *sdk = sampler_sdk_context(s);
    if (!rd->err && !rd->gone && sdk)
        rd->spans = otel_sdk_sample(sdk, rd->r, UNWIND_WORD_CONTEXT, rd->spans);
}

int sampler_read_give(struct sampler *s, const struct sampler_read_result *rd,
                      sampler_read_join_fn join, void *arg)
{
    struct sampler_counts *c = sampler_tally(s);
    if (rd->err || rd->gone) {
        sampler_unpaid(s, NULL);
        sampler_set_last(s, NULL);
        enum sample_status why = rd->err ? rd->why : SAMPLE_PROCESS_GONE;
        c->failed++;
        c->failed_by[why]++;
        return why == SAMPLE_PROCESS_GONE ? -ESRCH : 0;
    }
    const struct asyncio_result *ar = rd->ar;
    const struct unwind_result *r = rd->r;
    enum sample_status failed = SAMPLE_OK;
    size_t n = ar ? ar->nsamples : r->nthreads;
    for (size_t i = 0; i < n; i++) {
        const struct asyncio_sample *as = ar ? &ar->samples[i] : NULL;
        const struct unwind_thread *t = &r->threads[as ? as->thread : i];
        enum sample_status st = as ? as->status : t->status;
        if (st != SAMPLE_OK) {
            if (failed == SAMPLE_OK)
                failed = st;
            sampler_unpaid(s, t);
            continue;
        }
        const struct unwind_frame *mf;
        size_t mn;
        size_t ti = as ? as->thread : i;
        /* a suspended task is not what its thread's span is doing */
        const struct sample_span *span =
            rd->spans && !(as && as->suspended) ? &rd->spans[ti] : NULL;
        if (as)
            sampler_give(s, t, as->frames, as->nframes, as->task_name, span, as->task_name == NULL,
                         false);
        else if (!join)
            sampler_give(s, t, t->frames, t->nframes, NULL, span, true, false);
        else if (join(arg, i, t, &mf, &mn))
            sampler_give(s, t, mf, mn, NULL, span, false,
                         false); /* (joined stacks are not coalesced) */
        else
            sampler_unpaid(s, t);
    }
    if (failed != SAMPLE_OK) {
        sampler_set_last(s, NULL);
        c->failed++;
        c->failed_by[failed]++;
        return failed == SAMPLE_PROCESS_GONE ? -ESRCH : 0;
    }
    /* plain stacks only can be counted again */
    sampler_set_last(s, ar || join ? NULL : r);
    c->taken++;
    return 0;
}

/* ---- the read as a source ---------------------------------------------------- */

static int sampler_read_attempt(struct sample_source *src, uint64_t now_ns)
{
    (void)now_ns;
    struct sampler_read_result rd;
    sampler_read_collect(src->s, 0, &rd);
    return sampler_read_give(src->s, &rd, NULL, NULL);
}

static void sampler_read_free(struct sample_source *src)
{
    alloc_free(src);
}

static const struct sample_source_ops sampler_read_ops = {
    .name = "read",
    .attempt = sampler_read_attempt,
    .free = sampler_read_free,
};

int sampler_read_new(struct sampler *s, struct sample_source **out)
{
    struct sample_source *src = alloc_calloc(1, sizeof(*src));
    if (!src)
        return -ENOMEM;
    *src = (struct sample_source){.ops = &sampler_read_ops, .s = s};
    *out = src;
    return 0;
}
