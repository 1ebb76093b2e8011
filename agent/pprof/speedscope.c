/* SPDX-License-Identifier: MIT */
/* speedscope.c: a window as speedscope's JSON file format (speedscope.h). */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/jsonw.h"
#include "pprof/speedscope.h"
#include "pprof/threads.h"

/* The stack of sample @si as frame (function) indices, root first. */
static void speedscope_stack(const struct agg *a, size_t si, struct jsonw *w)
{
    const struct agg_sample *s = agg_sample(a, si);
    jsonw_array(w, NULL);
    for (uint32_t k = s->nlocations; k-- > 0;)
        jsonw_uint(w, NULL, agg_location(a, s->locations[k])->function);
    jsonw_end(w);
}

static void speedscope_frames(const struct agg *a, struct jsonw *w)
{
    jsonw_object(w, "shared");
    jsonw_array(w, "frames");
    for (size_t f = 0; f < agg_function_count(a); f++) {
        const struct agg_function *fn = agg_function(a, f);
        jsonw_object(w, NULL);
        jsonw_string(w, "name", agg_string(a, fn->name));
        if (!agg_function_is_marker(a, f)) {
            jsonw_string(w, "file", agg_string(a, fn->filename));
            if (fn->start_line > 0)
                jsonw_int(w, "line", fn->start_line);
        }
        jsonw_end(w);
    }
    jsonw_end(w);
    jsonw_end(w);
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
                               struct jsonw *w)
{
    const struct out_thread *t = &th->t[k];
    char name[320];
    snprintf(name, sizeof(name), "%s (%" PRIu64 ")", agg_string(a, t->name), t->id);
    int64_t total = 0;
    jsonw_object(w, NULL);
    jsonw_string(w, "type", "sampled");
    jsonw_string(w, "name", name);
    jsonw_string(w, "unit", "nanoseconds");
    jsonw_int(w, "startValue", 0);
    for (int pass = 0; pass < 2; pass++) {
        jsonw_array(w, pass == 0 ? "samples" : "weights");
        if (order) {
            for (size_t i = 0; i < n;) {
                uint32_t si = e[order[i]].sample;
                int64_t wt = 0;
                for (; i < n && e[order[i]].sample == si; i++)
                    wt += speedscope_interval(agg_sample(a, si));
                if (pass == 0)
                    speedscope_stack(a, si, w);
                else
                    jsonw_int(w, NULL, wt);
                total += pass == 0 ? wt : 0;
            }
        } else {
            for (size_t si = 0; si < agg_sample_count(a); si++) {
                if (th->of[si] != k)
                    continue;
                const struct agg_sample *s = agg_sample(a, si);
                if (pass == 0)
                    speedscope_stack(a, si, w);
                else
                    jsonw_int(w, NULL, s->nanos);
                total += pass == 0 ? s->nanos : 0;
            }
        }
        jsonw_end(w);
    }
    jsonw_int(w, "endValue", total);
    jsonw_end(w);
}

int speedscope_write(const struct agg *a, const struct timeline *tl,
                     const struct speedscope_meta *m, FILE *out)
{
    struct out_threads th;
    struct jsonw w;
    int err = out_threads_build(a, m->pid, &th);
    if (err)
        return err;
    size_t n = 0;
    const struct timeline_entry *e = tl ? timeline_entries(tl, &n) : NULL;
    uint32_t *order = NULL; /* entries grouped by thread, each thread's in time order */
    size_t *start = NULL;
    if (tl && (err = out_threads_order(&th, tl, &order, &start)))
        goto out;

    jsonw_init_file(&w, out, 0);
    jsonw_object(&w, NULL);
    jsonw_string(&w, "$schema", "https://www.speedscope.app/file-format-schema.json");
    speedscope_frames(a, &w);
    jsonw_array(&w, "profiles");
    for (size_t k = 0; k < th.n; k++) {
        if (order)
            speedscope_profile(a, &th, k, e, order + start[k], start[k + 1] - start[k], &w);
        else
            speedscope_profile(a, &th, k, NULL, NULL, 0, &w);
    }
    jsonw_end(&w);
    jsonw_string(&w, "name", m->name ? m->name : "pyprofd");
    jsonw_int(&w, "activeProfileIndex", 0);
    jsonw_string(&w, "exporter", m->exporter ? m->exporter : "pyprofd");
    jsonw_end(&w);
    err = jsonw_finish(&w);
    if (!err && (fputc('\n', out) == EOF || ferror(out)))
        err = -EIO;
out:
    alloc_free(order);
    alloc_free(start);
    out_threads_release(&th);
    return err;
}
