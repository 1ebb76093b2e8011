/* SPDX-License-Identifier: MIT */
/*
 * fdcap.c: the samplers' budget of kept descriptors (see fdcap.h).
 */
#include "base/compat.h"

#include <stdatomic.h>
#include <sys/resource.h>

#include "base/fdcap.h"

#define FDCAP_MAX 4096l

static atomic_long fdcap_open;
static atomic_long fdcap_limit = -1;

static long fdcap_cap(void)
{
    long cap = atomic_load(&fdcap_limit);
    if (cap < 0) {
        struct rlimit rl;
        cap = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                  ? (long)(rl.rlim_cur / 4)
                  : 256;
        if (cap > FDCAP_MAX)
            cap = FDCAP_MAX;
        atomic_store(&fdcap_limit, cap);
    }
    return cap;
}

bool fdcap_take(void)
{
    if (atomic_fetch_add(&fdcap_open, 1) < fdcap_cap())
        return true;
    atomic_fetch_sub(&fdcap_open, 1);
    return false;
}

void fdcap_give(void)
{
    atomic_fetch_sub(&fdcap_open, 1);
}

long fdcap_used(void)
{
    return atomic_load(&fdcap_open);
}
