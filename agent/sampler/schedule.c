/* SPDX-License-Identifier: MIT */
/*
 * schedule.c: fixed-rate schedule arithmetic (see schedule.h).
 */
#include "base/compat.h"

#include "sampler/schedule.h"

void schedule_init(struct schedule *s, uint64_t now_ns, uint64_t interval_ns)
{
    PYPROFD_ASSERT(interval_ns > 0);
    *s = (struct schedule){.start_ns = now_ns, .interval_ns = interval_ns, .next_ns = now_ns};
}

uint64_t schedule_due(const struct schedule *s)
{
    return s->next_ns;
}

void schedule_attempted(struct schedule *s, uint64_t now_ns)
{
    s->attempts++;
    s->next_ns += s->interval_ns;
    uint64_t max_lag = (uint64_t)SCHEDULE_MAX_LAG_INTERVALS * s->interval_ns;
    if (now_ns > s->next_ns && now_ns - s->next_ns > max_lag) {
        s->next_ns = now_ns; /* hopelessly late: what is skipped counts as missed */
        /* the lag now can never be made up (the schedule's phase moved),
         * less the attempt due at once at the new next_ns */
        uint64_t lost = schedule_missed(s, now_ns);
        lost = lost > 0 ? lost - 1 : 0;
        if (lost > s->given_up)
            s->given_up = lost;
    }
}

uint64_t schedule_attempts(const struct schedule *s)
{
    return s->attempts;
}

uint64_t schedule_given_up(const struct schedule *s)
{
    return s->given_up;
}

uint64_t schedule_missed(const struct schedule *s, uint64_t now_ns)
{
    if (now_ns < s->start_ns)
        return 0;
    /* attempts due in [start, now]: the one at start, then one per interval */
    uint64_t expected = (now_ns - s->start_ns) / s->interval_ns + 1;
    return expected > s->attempts ? expected - s->attempts : 0;
}

uint64_t schedule_jitter(uint64_t due_ns, uint64_t interval_ns, uint64_t now_ns,
                         struct rand_state *rng)
{
    PYPROFD_ASSERT(interval_ns > 0);
    uint64_t x = rand_next(rng);
    uint64_t past = now_ns >= due_ns ? now_ns - due_ns + 1 : 0; /* the part already gone */
    if (past >= interval_ns)
        past = 0;
    return past + x % (interval_ns - past);
}
