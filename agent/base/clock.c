/* SPDX-License-Identifier: MIT */
/*
 * clock.c: the system clocks behind struct clock (see clock.h).
 */
#include "base/compat.h"

#include <sys/prctl.h>

#include "base/clock.h"

static uint64_t clock_read(clockid_t id)
{
    struct timespec ts;
    /* these clocks cannot fail on Linux for a valid id */
    (void)clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_now(void)
{
    return clock_read(CLOCK_MONOTONIC);
}

int64_t clock_real_now(void)
{
    return (int64_t)clock_read(CLOCK_REALTIME);
}

uint64_t clock_thread_cpu_now(void)
{
    return clock_read(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t clock_system_mono(void *arg)
{
    (void)arg;
    return clock_mono_now();
}

static int64_t clock_system_real(void *arg)
{
    (void)arg;
    return clock_real_now();
}

static uint64_t clock_system_cpu(void *arg)
{
    (void)arg;
    return clock_thread_cpu_now();
}

const struct clock clock_system = {
    .mono_ns = clock_system_mono,
    .real_ns = clock_system_real,
    .thread_cpu_ns = clock_system_cpu,
    .arg = NULL,
};

int clock_set_slack(uint64_t slack_ns)
{
    if (slack_ns == 0)
        slack_ns = 1; /* 0 would mean "back to the default" */
    return prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0) ? -errno : 0;
}
