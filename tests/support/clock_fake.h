/* SPDX-License-Identifier: MIT */
/*
 * clock_fake.h: a settable struct clock (base/clock.h) for tests. Its three
 * readings are plain fields the test sets or moves on; nothing advances by
 * itself, so code driven on it (the sampling loop's loop_step(), a backoff)
 * sees exactly the times the test decides.
 *
 * Thread safety: none; a fake clock is read and set by one thread (a test
 * that drives a loop with loop_step() instead of its thread).
 */
#ifndef PYPROFD_TESTS_CLOCK_FAKE_H
#define PYPROFD_TESTS_CLOCK_FAKE_H

#include "base/compat.h"

#include "base/clock.h"

/** The readings; a value type the test owns (e.g. on its stack). */
struct clock_fake {
    uint64_t mono_ns; /* CLOCK_MONOTONIC */
    int64_t real_ns;  /* CLOCK_REALTIME, ns since the epoch */
    uint64_t cpu_ns;  /* CLOCK_THREAD_CPUTIME_ID: whichever thread asks */
};

/** A struct clock that reads @a f (borrowed: it must outlive the clock's users). */
struct clock clock_fake_clock(struct clock_fake *f);

/** Moves the monotonic and the wall clock on by @a ns together. */
void clock_fake_advance(struct clock_fake *f, uint64_t ns);

/** The thread CPU time goes up by @a ns (work the code under test "did"). */
void clock_fake_spend(struct clock_fake *f, uint64_t ns);

#endif /* PYPROFD_TESTS_CLOCK_FAKE_H */
