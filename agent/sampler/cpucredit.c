/* SPDX-License-Identifier: MIT */
/*
 * cpucredit.c: cpu mode's credit of a thread's CPU time (see cpucredit.h).
 *
 * Why a credit and not the share of its time 'R' that the thread ran
 * (schedstat's run / (run + wait) since the last look, paid at each 'R'
 * attempt): the kernel books a wait into schedstat only when it ends, and
 * CPU time at ticks and switches, so over one interval the share is lumpy,
 * and the attempts that see it are not the ones it belongs to. Measured
 * here over cgroup quotas of 5-30 % and duty cycles from 2 ms in 20 to
 * always busy, the share came out at 0.87-1.21 of the CPU time, the credit
 * at 0.97-1.00 (docs/performance.md, issue 38): it only adds CPU time up,
 * so how the kernel books it between two looks does not matter.
 *
 * Why up to CPUCREDIT_MAX_PAY samples at once: a thread that never waits
 * for a CPU ('R' exactly when it runs) earns as fast as attempts find it
 * 'R', on average; paying one sample at most per attempt would leave the
 * owed time to drift up like a random walk (simulated: a thread busy 5 ms
 * of every 10 came out at 0.97 of its CPU time after 5 s at 100 Hz, one
 * busy 1 ms of every 10 at 0.90); paying what is owed keeps it under a
 * sample or two.
 *
 * Why the cap on what is owed is at least CPUCREDIT_OWED_NS: the kernel
 * books CPU time at its ticks and at switches (every 4 ms at HZ 250), which
 * at 1 kHz is several samples earned at once.
 */
#include "base/compat.h"

#include "sampler/cpucredit.h"

/* The most a thread may be owed. */
static uint64_t cpucredit_most(uint64_t interval_ns)
{
    uint64_t most = CPUCREDIT_MAX_OWED * interval_ns;
    return most < CPUCREDIT_OWED_NS ? CPUCREDIT_OWED_NS : most;
}

bool cpucredit_earn(struct cpucredit *c, uint64_t cpu_ns, uint64_t interval_ns)
{
    if (interval_ns == 0)
        return false;
    if (!c->started || cpu_ns < c->cpu_ns) {
        c->started = true;
        c->cpu_ns = cpu_ns;
        c->owed_ns = interval_ns / 2; /* rounding to the nearest sample */
        return false;
    }
    uint64_t most = cpucredit_most(interval_ns);
    uint64_t earned = cpu_ns - c->cpu_ns;
    c->cpu_ns = cpu_ns;
    c->owed_ns = earned >= most - c->owed_ns ? most : c->owed_ns + earned;
    return c->owed_ns >= interval_ns;
}

void cpucredit_refund(struct cpucredit *c, unsigned n, uint64_t interval_ns)
{
    uint64_t most = cpucredit_most(interval_ns), back = (uint64_t)n * interval_ns;
    if (c->started)
        c->owed_ns = back >= most - c->owed_ns ? most : c->owed_ns + back;
}

unsigned cpucredit_pay(struct cpucredit *c, uint64_t interval_ns)
{
    if (interval_ns == 0 || !c->started || c->owed_ns < interval_ns)
        return 0;
    uint64_t n = c->owed_ns / interval_ns;
    if (n > CPUCREDIT_MAX_PAY)
        n = CPUCREDIT_MAX_PAY;
    c->owed_ns -= n * interval_ns;
    return (unsigned)n;
}
