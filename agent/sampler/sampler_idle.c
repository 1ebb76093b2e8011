/* SPDX-License-Identifier: MIT */
/*
 * sampler_idle.c: idle threads as a filter in front of the read (source.h,
 * "idle"; idle_check): before each attempt, whether any thread ran since the
 * last read (sampler/runwatch.h); when none did, the attempt counts that
 * read's stacks again (in cpu mode: when every thread is asleep, it finds
 * none on a CPU) without reading the target. A target whose attempts are answered so
 * SAMPLER_PARK_AFTER times in a row may be parked (sampler.h, "Parking"): off the schedule until
 * one of its threads runs, its attempts due meanwhile counted as they would have come out.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "sampler/runwatch.h"
#include "sampler/source.h"

/* attempts in a row answered without a read before a target may be parked:
 * at 100 Hz 80 ms, so a thread that wakes every few tens of ms stays on the
 * schedule (parking costs system calls at both ends) */
#define SAMPLER_PARK_AFTER 8u

struct sampler_idle {
    struct sample_source src;
    struct runwatch *watch;
    unsigned quiet;   /* attempts in a row answered without a read */
    bool parked;      /* sampler_park(): attempts are counted at sampler_catch_up() */
    bool no_park;     /* parking failed for a reason that will not pass */
    bool park_asleep; /* ... as cpu mode's "none on a CPU", else as the last read again */
    /* how long after the middle of their interval the attempts are made
     * (the loop's tick, its timer slack, the wake-up), averaged: at an
     * unpark the attempts due within it before the first switch are made
     * reading, as they would have been made after it (sampler_idle_catch_up()) */
    int64_t late_ns;
    uint64_t unparked_ns; /* the last unpark: attempts due before it are not measured */
};

/*
 * How late this attempt is made after the middle of its interval, into the
 * average (late_ns, weight 1/8): see sampler_idle_catch_up(). Not an attempt
 * of a catch-up (more than an interval late), nor one due before the last
 * unpark (made at once, as late as the wake-up came).
 */
static void sampler_idle_before(struct sample_source *src, uint64_t now_ns)
{
    struct sampler_idle *d = (struct sampler_idle *)src;
    uint64_t grid = sampler_grid(src->s), due = grid + sampler_jitter(src->s);
    uint64_t interval = sampler_opts_of(src->s)->interval_ns;
    if (now_ns < due || due < d->unparked_ns || now_ns - due > interval)
        return;
    int64_t late = (int64_t)(now_ns - grid) - (int64_t)(interval / 2);
    d->late_ns += (late - d->late_ns) / 8;
}

/*
 * Before the read, whether it is needed at all. Counts the attempt (taken,
 * saved) and returns true when the watch proves that no thread ran since
 * the last read (its stacks are counted again, as the same stacks: the
 * coalescing contract holds) or, in cpu mode, that every thread is asleep
 * (nothing is kept, as the read would have found; a thread waiting for a
 * CPU is read, for what its CPU time pays: sampler/cpucredit.h).
 */
static bool sampler_idle_unread(struct sampler_idle *d, uint64_t now_ns)
{
    struct sampler *s = d->src.s;
    enum runwatch_verdict v =
        runwatch_check(d->watch, now_ns, sampler_opts_of(s)->mode == PROFILE_CPU);
    if (v == RUNWATCH_READ || (v == RUNWATCH_SAME && !sampler_last(s))) {
        d->quiet = 0;
        return false;
    }
    d->park_asleep = v == RUNWATCH_ASLEEP;
    sampler_again(s, v == RUNWATCH_ASLEEP);
    /* parked only after this many checks in a row saw no thread switched */
    if (runwatch_moved(d->watch))
        d->quiet = 0;
    else if (d->quiet < SAMPLER_PARK_AFTER)
        d->quiet++;
    return true;
}

static int sampler_idle_attempt(struct sample_source *src, uint64_t now_ns)
{
    struct sampler_idle *d = (struct sampler_idle *)src;
    if (sampler_idle_unread(d, now_ns))
        return 0;
    int rc = src->next->ops->attempt(src->next, now_ns);
    runwatch_read(d->watch, now_ns, sampler_last(src->s) != NULL);
    return rc;
}

/* Asleep by its context switches or schedstat, without another read (runwatch_on_cpu()). */
static int sampler_idle_on_cpu(const struct sample_source *src, pid_t tid, uint64_t *cpu_ns)
{
    return runwatch_on_cpu(((const struct sampler_idle *)src)->watch, tid, cpu_ns);
}

static bool sampler_idle_parkable(const struct sample_source *src)
{
    const struct sampler_idle *d = (const struct sampler_idle *)src;
    return !d->parked && !d->no_park && d->quiet >= SAMPLER_PARK_AFTER &&
           (d->park_asleep || sampler_last(src->s)) && runwatch_how(d->watch) == IDLE_CHECK_PERF;
}

static int sampler_idle_park(struct sample_source *src, int epfd, uint64_t token)
{
    struct sampler_idle *d = (struct sampler_idle *)src;
    if (!sampler_idle_parkable(src))
        return -ENOTSUP;
    int err = runwatch_park(d->watch, epfd, token);
    if (!err)
        d->parked = true;
    else if (err == -EAGAIN)
        d->quiet = 0; /* a thread ran meanwhile: idle again first */
    else
        d->no_park = true; /* (a waker refused: the locked-memory limit, ...) for good */
    return err;
}

static bool sampler_idle_parked(const struct sample_source *src)
{
    return ((const struct sampler_idle *)src)->parked;
}

/* Counts each attempt due before @until as answered the way the park began. */
static void sampler_idle_catch_up_to(struct sampler_idle *d, uint64_t until)
{
    struct sampler *s = d->src.s;
    uint64_t due;
    while ((due = sampler_due(s)) < until) {
        sampler_pass(s, due);
        sampler_again(s, d->park_asleep);
    }
}

/*
 * While parked, the attempts due so far, as they would have been made: up to
 * now while no thread was switched since the park (the wakers' rings have
 * not moved), else up to the first switch (the wakers' records carry their
 * times); what is due after it is made by the schedule, reading, once the
 * loop unparks the target (at once: as soon as the wake-up arrives).
 *
 * An attempt on the schedule is made some time after it falls due (the
 * loop's tick, its timer slack, the wake-up), and it sees the thread as it
 * is then. So the attempts due shortly before the first switch would have
 * seen the thread run: they are left to the unpark too, which reads them at
 * once. Counting them as the park began (the thread idle) lost a lateness's
 * worth of every run that follows a park: a thread that works 2 ms every
 * 100 ms was seen at half its work (issue 37).
 *
 * How many: on the schedule, the attempt of interval [g, g + interval) is
 * made at g + interval / 2 + late_ns on average (late_ns is measured so),
 * and a caught-up one is due at a uniform point of its interval, so at
 * g + interval / 2 on average: the attempts due within late_ns before the
 * switch. (Not the lateness after the due time: a late attempt draws the
 * next one's point from what is left of its interval, so the schedule's
 * points lie later than uniform ones, and that lateness is the smaller:
 * 2 ms runs came out at 0.75-0.9 of their time with it, at 1 kHz.) For the
 * same reason the catch-up while no thread ran stops late_ns before now.
 */
static void sampler_idle_catch_up(struct sample_source *src, uint64_t now_ns)
{
    struct sampler_idle *d = (struct sampler_idle *)src;
    if (!d->parked)
        return;
    uint64_t woke, until = now_ns + 1;
    if (!runwatch_still(d->watch)) {
        if (!runwatch_woke_at(d->watch, &woke))
            return;
        if (woke < until)
            until = woke;
    }
    uint64_t late = d->late_ns > 0 ? (uint64_t)d->late_ns : 0;
    sampler_idle_catch_up_to(d, until > late ? until - late : 0);
}

static void sampler_idle_unpark(struct sample_source *src, uint64_t now_ns, int epfd)
{
    struct sampler_idle *d = (struct sampler_idle *)src;
    if (!d->parked)
        return;
    sampler_idle_catch_up(src, now_ns);
    runwatch_unpark(d->watch, epfd);
    d->parked = false;
    d->quiet = 0;
    d->unparked_ns = now_ns;
}

static const char *sampler_idle_describe(const struct sample_source *src)
{
    return runwatch_describe(((const struct sampler_idle *)src)->watch);
}

static enum idle_check sampler_idle_method(const struct sample_source *src)
{
    return runwatch_how(((const struct sampler_idle *)src)->watch);
}

static void sampler_idle_free(struct sample_source *src)
{
    struct sampler_idle *d = (struct sampler_idle *)src;
    if (src->next)
        src->next->ops->free(src->next);
    runwatch_free(d->watch);
    alloc_free(d);
}

static const struct sample_source_ops sampler_idle_ops = {
    .name = "idle",
    .before = sampler_idle_before,
    .attempt = sampler_idle_attempt,
    .on_cpu = sampler_idle_on_cpu,
    .parkable = sampler_idle_parkable,
    .park = sampler_idle_park,
    .parked = sampler_idle_parked,
    .catch_up = sampler_idle_catch_up,
    .unpark = sampler_idle_unpark,
    .idle_check = sampler_idle_describe,
    .idle_how = sampler_idle_method,
    .free = sampler_idle_free,
};

int sampler_idle_new(struct sampler *s, struct sample_source *next, uint64_t now_ns,
                     struct sample_source **out)
{
    const struct sampler_opts *o = sampler_opts_of(s);
    struct sampler_idle *d = alloc_calloc(1, sizeof(*d));
    struct runwatch_opts wo = {
        .proc_root = o->proc_root,
        .all_threads = (o->unwind_flags & UNWIND_ALL_THREADS) != 0,
        .how = o->idle_check,
    };
    if (!d || runwatch_new(sampler_pid(s), &wo, now_ns, &d->watch)) {
        alloc_free(d);
        next->ops->free(next);
        return -ENOMEM;
    }
    d->src = (struct sample_source){.ops = &sampler_idle_ops, .next = next, .s = s};
    *out = &d->src;
    return 0;
}
