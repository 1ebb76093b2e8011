/* SPDX-License-Identifier: MIT */
/*
 * loop_requests.c: profile requests of the sampling loop: started, fed and ended
 * by housekeeping on the sampling thread, waited for by the asking thread
 * (see loop.h, loop_profile(); the taps themselves are taps.c's).
 */
#include "base/compat.h"

#include "base/clock.h"

#include "daemon/loop_internal.h"

/* every request the HTTP server admits (server.max_concurrent_profiles, at
 * most this) gets its tap on each target: none is left out for want of a slot */
_Static_assert(SAMPLER_MAX_TAPS >= CONFIG_MAX_CONCURRENT_PROFILES,
               "a sampler has a tap slot for every profile request the server admits");

/* ---- requests ------------------------------------------------------------------ */

void loop_request_done(struct tap_request *r)
{
    r->done = true;
    pthread_cond_broadcast(r->waiter);
}

void loop_requests_tick(struct loop *l, uint64_t now)
{
    for (struct tap_request *r = l->requests; r; r = r->next) {
        if (r->done)
            continue;
        if (!r->started && (r->cancelled || l->stop)) {
            loop_request_done(r);
        } else if (!r->started) {
            bool found = r->pid == 0;
            for (size_t i = 0; i < l->ntargets && !found; i++)
                found =
                    target_info(l->targets[i])->key.pid == r->pid && !target_gone(l->targets[i]);
            if (!found) {
                r->err = -ENOENT;
                snprintf(r->errmsg, sizeof(r->errmsg), "process %d is not a current target",
                         (int)r->pid);
                loop_request_done(r);
                continue;
            }
            /* a tap is a target's third window: a quarter of its memory cap */
            struct agg_limits lim =
                window_limits_for(l->cfg->global.limits.target_memory_bytes / 2);
            if (taps_begin(r, now, l->max_targets, &lim, l->cfg->global.limits.max_profile_bytes)) {
                loop_request_done(r);
                continue;
            }
            waiter_catch_up(l->waiter, now); /* what was due before goes to the windows only */
            for (size_t i = 0; i < l->ntargets; i++) {
                if (!target_gone(l->targets[i]) && taps_wants(r, l->targets[i]))
                    taps_attach(r, l->targets[i]);
            }
        } else if (now >= r->deadline || r->cancelled || l->stop) {
            waiter_catch_up(l->waiter, now); /* ... and what was due since, to the taps too */
            taps_finish(r);
            loop_request_done(r);
        }
    }
}

void loop_capture_release(struct loop_capture *c)
{
    struct tap_request r = {.parts = c->parts, .nparts = c->nparts};
    taps_release(&r);
    memset(c, 0, sizeof(*c));
}

int loop_profile(struct loop *l, uint32_t seconds, pid_t pid, bool (*cancelled)(const void *arg),
                 const void *cancel_arg, struct loop_capture *out, char *err, size_t errlen)
{
    if (seconds == 0 || pid < 0)
        return -EINVAL;
    pthread_cond_t cond;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cond, &ca);
    pthread_condattr_destroy(&ca);
    struct tap_request r = {.pid = pid, .seconds = seconds, .waiter = &cond};
    int64_t started_real = clock_real(l->opts.clock);
    uint64_t started = loop_now(l);

    pthread_mutex_lock(&l->mu);
    bool stopping = l->stop || !l->running;
    if (l->nrequests >= SAMPLER_MAX_TAPS || stopping) {
        pthread_mutex_unlock(&l->mu);
        pthread_cond_destroy(&cond);
        snprintf(err, errlen, "%s",
                 stopping ? "the agent is stopping" : "too many profile requests at once");
        return stopping ? -ECANCELED : -EBUSY;
    }
    r.next = l->requests;
    /* unlinked again below, under the same lock, before r goes out of scope */
    /* cppcheck-suppress autoVariables */
    l->requests = &r;
    l->nrequests++;
    l->kick = true;
    pthread_cond_signal(&l->wake);
    bool was_cancelled = false;
    while (!r.done) {
        struct timespec ts = clock_timespec(clock_mono_now() + 100000000ull);
        (void)pthread_cond_timedwait(&cond, &l->mu, &ts);
        /* the sampling thread ends the request (it owns the taps); ask it to */
        if (!r.done && !r.cancelled && cancelled && cancelled(cancel_arg)) {
            was_cancelled = r.cancelled = true;
            l->kick = true;
            pthread_cond_signal(&l->wake);
        }
    }
    for (struct tap_request **pp = &l->requests; *pp; pp = &(*pp)->next) {
        if (*pp == &r) {
            *pp = r.next;
            break;
        }
    }
    l->nrequests--;
    pthread_mutex_unlock(&l->mu);
    pthread_cond_destroy(&cond);

    int e = r.err;
    if (!e && was_cancelled) {
        e = -ECANCELED;
        snprintf(err, errlen, "the request was cancelled");
    } else if (e && r.errmsg[0]) {
        snprintf(err, errlen, "%s", r.errmsg);
    }
    if (e) {
        taps_release(&r);
        return e;
    }
    *out = (struct loop_capture){.parts = r.parts,
                                 .nparts = r.nparts,
                                 .start_real = started_real,
                                 .duration_ns = loop_now(l) - started,
                                 .max_bytes = r.max_bytes};
    return 0;
}
