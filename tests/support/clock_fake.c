/* SPDX-License-Identifier: MIT */
/*
 * clock_fake.c: the settable test clock (see clock_fake.h).
 */
#include "base/compat.h"

#include "clock_fake.h"

static uint64_t clock_fake_mono(void *arg)
{
    const struct clock_fake *f = arg;
    return f->mono_ns;
}

static int64_t clock_fake_real(void *arg)
{
    const struct clock_fake *f = arg;
    return f->real_ns;
}

static uint64_t clock_fake_cpu(void *arg)
{
    const struct clock_fake *f = arg;
    return f->cpu_ns;
}

struct clock clock_fake_clock(struct clock_fake *f)
{
    return (struct clock){
        .mono_ns = clock_fake_mono,
        .real_ns = clock_fake_real,
        .thread_cpu_ns = clock_fake_cpu,
        .arg = f,
    };
}

void clock_fake_advance(struct clock_fake *f, uint64_t ns)
{
    f->mono_ns += ns;
    f->real_ns += (int64_t)ns;
}

void clock_fake_spend(struct clock_fake *f, uint64_t ns)
{
    f->cpu_ns += ns;
}
