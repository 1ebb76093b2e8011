/* SPDX-License-Identifier: MIT */
/*
 * taps.c: profile requests' taps on targets (see taps.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "daemon/target.h"
#include "daemon/taps.h"

bool taps_wants(const struct tap_request *r, const struct target *t)
{
    return r->started && !r->done && (r->pid == 0 || r->pid == target_info(t)->key.pid);
}

int taps_begin(struct tap_request *r, uint64_t now, size_t max_parts,
               const struct agg_limits *limits, uint64_t max_bytes)
{
    r->cap = max_parts ? max_parts : 1;
    r->parts = alloc_calloc(r->cap, sizeof(*r->parts));
    if (!r->parts) {
        r->err = -ENOMEM;
        snprintf(r->errmsg, sizeof(r->errmsg), "out of memory");
        r->done = true;
        return -ENOMEM;
    }
    r->limits = *limits;
    r->max_bytes = max_bytes;
    r->started = true;
    r->deadline = now + r->seconds * 1000000000ull;
    return 0;
}

static void taps_detach(struct tap_part *p)
{
    if (p->on) {
        target_remove_tap(p->on, p->agg);
        p->on = NULL;
    }
}

void taps_attach(struct tap_request *r, struct target *t)
{
    if (r->nparts == r->cap)
        return;
    struct tap_part *p = &r->parts[r->nparts];
    memset(p, 0, sizeof(*p));
    if (agg_new(&r->limits, &p->agg))
        return;
    const struct target_info *ti = target_info(t);
    struct sample_sink sink = agg_sink(p->agg);
    if (labels_copy(&p->labels, &ti->labels) || target_add_tap(t, &sink)) {
        labels_release(&p->labels);
        agg_free(p->agg);
        p->agg = NULL;
        return;
    }
    p->mode = ti->mode;
    p->period_ns = (int64_t)ti->interval_ns;
    p->pid = ti->key.pid;
    p->on = t;
    r->nparts++;
}

void taps_detach_target(struct tap_request *r, struct target *t)
{
    for (; r; r = r->next) {
        for (size_t i = 0; i < r->nparts; i++) {
            if (r->parts[i].on == t)
                taps_detach(&r->parts[i]);
        }
    }
}

void taps_finish(struct tap_request *r)
{
    for (size_t i = 0; i < r->nparts; i++)
        taps_detach(&r->parts[i]);
    r->done = true;
}

void taps_release(struct tap_request *r)
{
    for (size_t i = 0; i < r->nparts; i++) {
        agg_free(r->parts[i].agg);
        labels_release(&r->parts[i].labels);
    }
    alloc_free(r->parts);
    r->parts = NULL;
    r->nparts = r->cap = 0;
}
