/* SPDX-License-Identifier: MIT */
/*
 * waiter.c: the helper thread that wakes the sampling thread for kernel
 * samples and parked targets' wakers, and the parked table (see waiter.h).
 */
#include "base/compat.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "daemon/waiter.h"

/* The helper's own token in the epoll set: the waiter stops. Native targets'
 * descriptors carry 0; a parked target's wakers index | generation << 32,
 * never 0 nor this. */
#define WAITER_STOP UINT64_MAX

struct waiter_parked {
    struct target *t; /* NULL: a free entry */
    uint32_t gen;
};

struct waiter {
    pthread_mutex_t *mu; /* the loop's lock: guards the posted state below */
    pthread_cond_t *wake;
    struct fleet *fleet;
    int ep, efd; /* -1 until the helper first starts */
    pthread_t thread;
    bool running;
    /* posted by the helper, taken by waiter_step() (under mu) */
    bool native_pending; /* kernel samples wait: drain */
    uint64_t woken[64];  /* parked targets' tokens whose threads ran */
    size_t nwoken;
    bool woken_all;        /* woken overflowed: unpark every parked target */
    uint64_t posted, done; /* what the helper posted, what the sampling thread handled */
    pthread_cond_t taken;  /* the helper waits on it between the two */
    bool quit;             /* stop waiting */
    /* the sampling thread's */
    size_t nnative;
    struct waiter_parked *parked;
    size_t parked_cap, nparked;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct epoll_event ev[16];
    for (;;) {
        int n = epoll_wait(w->ep, ev, (int)PYPROFD_ARRAY_SIZE(ev), -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        bool stop = false;
        for (int i = 0; i < n; i++)
            stop |= ev[i].data.u64 == WAITER_STOP;
        if (stop)
            break;
        pthread_mutex_lock(w->mu);
        for (int i = 0; i < n; i++) {
            uint64_t token = ev[i].data.u64;
            if (token == 0) /* a native: full target's samples */
                w->native_pending = true;
            else if (w->nwoken < PYPROFD_ARRAY_SIZE(w->woken))
                w->woken[w->nwoken++] = token; /* a parked target's thread ran */
            else
                w->woken_all = true;
        }
        uint64_t mine = ++w->posted;
        pthread_cond_signal(w->wake);
        while (w->done < mine && !w->quit)
            pthread_cond_wait(&w->taken, w->mu);
        bool quit = w->quit;
        pthread_mutex_unlock(w->mu);
        if (quit)
            break;
    }
    return NULL;
}

int waiter_new(pthread_mutex_t *mu, pthread_cond_t *wake, struct fleet *fleet, struct waiter **out)
{
    struct waiter *w = alloc_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->mu = mu;
    w->wake = wake;
    w->fleet = fleet;
    w->ep = w->efd = -1;
    pthread_cond_init(&w->taken, NULL);
    *out = w;
    return 0;
}

/* Starts the helper (once). Returns 0 or -errno. */
static int waiter_start(struct waiter *w)
{
    if (w->running)
        return 0;
    if (w->ep < 0)
        w->ep = epoll_create1(EPOLL_CLOEXEC);
    if (w->efd < 0)
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->ep < 0 || w->efd < 0)
        return -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAITER_STOP};
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->efd, &ev) && errno != EEXIST)
        return -errno;
    int err = pthread_create(&w->thread, NULL, waiter_main, w);
    if (err)
        return -err;
    w->running = true;
    return 0;
}

void waiter_stop(struct waiter *w)
{
    if (!w || !w->running)
        return;
    pthread_mutex_lock(w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->taken);
    pthread_mutex_unlock(w->mu);
    uint64_t one = 1;
    if (write(w->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
        log_error("cannot stop the waiter thread: %s", strerror(errno));
    pthread_join(w->thread, NULL);
    w->running = false;
    w->quit = false; /* (a target added later starts it again) */
}

void waiter_free(struct waiter *w)
{
    if (!w)
        return;
    waiter_stop(w);
    if (w->ep >= 0)
        close(w->ep);
    if (w->efd >= 0)
        close(w->efd);
    pthread_cond_destroy(&w->taken);
    alloc_free(w->parked);
    alloc_free(w);
}

void waiter_add(struct waiter *w, struct target *t)
{
    int fd = target_native_fd(t);
    if (fd < 0)
        return;
    int err = waiter_start(w);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (!err && epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev))
        err = -errno;
    if (err) /* drained every SAMPLER_NATIVE_DRAIN_NS only: most samples late */
        log_error("process %d: cannot wait for its kernel samples: %s",
                  (int)target_info(t)->key.pid, strerror(-err));
    w->nnative++;
}

/*
 * Puts parked entry @i back on the wheel, its attempts counted up to @now.
 * Those due since are made in this pass, not at the next tick boundary: a
 * thread that woke may run for less than a tick and a timer slack.
 */
static void waiter_unpark(struct waiter *w, size_t i, uint64_t now)
{
    struct target *t = w->parked[i].t;
    target_unpark(t, now, w->ep);
    w->parked[i].t = NULL;
    w->nparked--;
    uint64_t due = target_due(t);
    if ((due <= now ? fleet_add_ready : fleet_add)(w->fleet, target_slot(t), due))
        log_error("process %d: cannot put it back on the schedule",
                  (int)target_info(t)->key.pid); /* cannot happen: sized for max_targets */
}

void waiter_remove(struct waiter *w, struct target *t, uint64_t now)
{
    for (size_t i = 0; w->nparked && i < w->parked_cap; i++) {
        if (w->parked[i].t == t) /* its attempts so far, then the wheel's bookkeeping */
            waiter_unpark(w, i, now);
    }
    int fd = target_native_fd(t);
    if (fd < 0)
        return;
    if (w->ep >= 0)
        (void)epoll_ctl(w->ep, EPOLL_CTL_DEL, fd, NULL);
    w->nnative--;
}

bool waiter_pending(const struct waiter *w)
{
    return w->native_pending || w->nwoken || w->woken_all;
}

void waiter_step(struct waiter *w, struct target *const *targets, size_t n,
                 const struct clock *clock)
{
    pthread_mutex_lock(w->mu);
    bool native = w->native_pending, all = w->woken_all;
    uint64_t posted = w->posted;
    uint64_t woken[PYPROFD_ARRAY_SIZE(w->woken)];
    size_t nwoken = w->nwoken;
    memcpy(woken, w->woken, nwoken * sizeof(*woken));
    w->native_pending = w->woken_all = false;
    w->nwoken = 0;
    pthread_mutex_unlock(w->mu);
    if (!native && !nwoken && !all)
        return;
    if (native) {
        uint64_t now = clock_mono(clock);
        for (size_t i = 0; i < n; i++)
            target_native_drain(targets[i], now);
    }
    uint64_t now = clock_mono(clock);
    for (size_t k = 0; k < nwoken; k++) {
        size_t i = (size_t)(uint32_t)woken[k] - 1;
        if (i < w->parked_cap && w->parked[i].t && w->parked[i].gen == (uint32_t)(woken[k] >> 32))
            waiter_unpark(w, i, now);
    }
    for (size_t i = 0; all && i < w->parked_cap; i++) {
        if (w->parked[i].t)
            waiter_unpark(w, i, now);
    }
    pthread_mutex_lock(w->mu); /* the helper may poll again */
    w->done = posted;
    pthread_cond_signal(&w->taken);
    pthread_mutex_unlock(w->mu);
}

void waiter_consider(struct waiter *w, struct target *t)
{
    if (!target_parkable(t) || waiter_start(w))
        return;
    size_t i = 0;
    while (i < w->parked_cap && w->parked[i].t)
        i++;
    if (i == w->parked_cap) {
        size_t cap = w->parked_cap ? 2 * w->parked_cap : 64;
        struct waiter_parked *p = alloc_realloc(w->parked, cap * sizeof(*p));
        if (!p)
            return;
        memset(p + w->parked_cap, 0, (cap - w->parked_cap) * sizeof(*p));
        w->parked = p;
        w->parked_cap = cap;
    }
    uint32_t gen = w->parked[i].gen + 1;
    uint64_t token = (uint64_t)(i + 1) | (uint64_t)gen << 32; /* never 0 nor WAITER_STOP */
    if (target_park(t, w->ep, token))
        return;
    w->parked[i] = (struct waiter_parked){.t = t, .gen = gen};
    w->nparked++;
    fleet_remove(w->fleet, target_slot(t));
}

void waiter_catch_up(struct waiter *w, uint64_t now)
{
    for (size_t i = 0; w->nparked && i < w->parked_cap; i++) {
        if (w->parked[i].t)
            target_catch_up(w->parked[i].t, now);
    }
}

size_t waiter_nparked(const struct waiter *w)
{
    return w->nparked;
}

size_t waiter_nnative(const struct waiter *w)
{
    return w->nnative;
}
