/* SPDX-License-Identifier: MIT */
/* speedscope.c: a window as speedscope's JSON file format (speedscope.h). */
#include "base/compat.h"

#include "base/alloc.h"
#include "pprof/flamegraph.h"
#include "pprof/speedscope.h"
#include "pprof/threads.h"

/* The stack of sample @si as frame (function) indices, root first. */
static void speedscope_stack(const struct agg *a, size_t si, FILE *out)
{
    const struct agg_sample *s = agg_sample(a, si);
    fputc('[', out);
    for (uint32_t k = s->nlocations; k-- > 0;)
        fprintf(out, "%s%" PRIu32, k + 1 == s->nlocations ? "" : ",",
                agg_location(a, s->locations[k])->function);
    fputc(']', out);
}

static void speedscope_frames(const struct agg *a, FILE *out)
{
    fputs("{\"frames\":[", out);
    for (size_t f = 0; f < agg_function_count(a); f++) {
        const struct agg_function *fn = agg_function(a, f);
        fputs(f ? ",{\"name\":" : "{\"name\":", out);
        flame_json_string(agg_string(a, fn->name), out);
        if (!agg_function_is_marker(a, f)) {
            fputs(",\"file\":", out);
            flame_json_string(agg_string(a, fn->filename), out);
            if (fn->start_line > 0)
                fprintf(out, ",\"line\":%" PRId64, fn->start_line);
        }
        fputc('}', out);
    }
    fputs("]}", out);
}

/* One entry of a profile: a stack and its weight. */
static void speedscope_entry(const struct agg *a, size_t si, bool *first, FILE *samples)
{
    if (!*first)
        fputc(',', samples);
    *first = false;
    speedscope_stack(a, si, samples);
}

static int64_t speedscope_interval(const struct agg_sample *s)
{
    return s->count > 0 ? s->nanos / s->count : s->nanos;
}

/*
 * The profile of thread @k: its "samples" then its "weights", which need
 * two walks of the same entries (@order: the timeline's entries of this
 * thread, in time order, or NULL: the window's samples).
 */
static void speedscope_profile(const struct agg *a, const struct out_threads *th, size_t k,
                               const struct timeline_entry *e, const uint32_t *order, size_t n,
                               FILE *out)
{
    const struct out_thread *t = &th->t[k];
    char name[320];
    snprintf(name, sizeof(name), "%s (%" PRIu64 ")", agg_string(a, t->name), t->id);
    int64_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        bool first = true;
        if (pass == 0) {
            fputs("{\"type\":\"sampled\",\"name\":", out);
            flame_json_string(name, out);
            fputs(",\"unit\":\"nanoseconds\",\"startValue\":0,\"samples\":[", out);
        } else {
            fputs("],\"weights\":[", out);
        }
        if (order) {
            for (size_t i = 0; i < n;) {
                uint32_t si = e[order[i]].sample;
                int64_t w = 0;
                for (; i < n && e[order[i]].sample == si; i++)
                    w += speedscope_interval(agg_sample(a, si));
                if (pass == 0)
                    speedscope_entry(a, si, &first, out);
                else
                    fprintf(out, "%s%" PRId64, first ? "" : ",", w);
                first = false;
                total += pass == 0 ? w : 0;
            }
        } else {
            for (size_t si = 0; si < agg_sample_count(a); si++) {
                if (th->of[si] != k)
                    continue;
                const struct agg_sample *s = agg_sample(a, si);
                if (pass == 0)
                    speedscope_entry(a, si, &first, out);
                else
                    fprintf(out, "%s%" PRId64, first ? "" : ",", s->nanos);
                first = false;
                total += pass == 0 ? s->nanos : 0;
            }
        }
    }
    fprintf(out, "],\"endValue\":%" PRId64 "}", total);
}

int speedscope_write(const struct agg *a, const struct timeline *tl,
                     const struct speedscope_meta *m, FILE *out)
{
    struct out_threads th;
    int err = out_threads_build(a, m->pid, &th);
    if (err)
        return err;
    size_t n = 0;
    const struct timeline_entry *e = tl ? timeline_entries(tl, &n) : NULL;
    uint32_t *order = NULL; /* entries grouped by thread, each thread's in time order */
    size_t *start = NULL;
    if (tl && (err = out_threads_order(&th, tl, &order, &start)))
        goto out;

    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":", out);
    speedscope_frames(a, out);
    fputs(",\"profiles\":[", out);
    for (size_t k = 0; k < th.n; k++) {
        if (k)
            fputc(',', out);
        if (order)
            speedscope_profile(a, &th, k, e, order + start[k], start[k + 1] - start[k], out);
        else
            speedscope_profile(a, &th, k, NULL, NULL, 0, out);
    }
    fputs("],\"name\":", out);
    flame_json_string(m->name ? m->name : "pyprofd", out);
    fputs(",\"activeProfileIndex\":0,\"exporter\":", out);
    flame_json_string(m->exporter ? m->exporter : "pyprofd", out);
    fputs("}\n", out);
    if (ferror(out))
        err = -EIO;
out:
    alloc_free(order);
    alloc_free(start);
    out_threads_release(&th);
    return err;
}
