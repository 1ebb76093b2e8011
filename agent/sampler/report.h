/* SPDX-License-Identifier: MIT */
/*
 * report.h: what one target's sampler counts, as a plain type (struct
 * sampler_counts): the sampler fills it (sampler/sampler.h), the daemon
 * keeps it per target and job (daemon/report.h), the HTTP side renders it
 * (exporters/pull/views.c). It includes nothing but base, so an exporter
 * that shows /targets or /metrics compiles without the unwinder or any
 * CPython ABI header.
 *
 * Header only.
 */
#ifndef PYPROFD_SAMPLER_REPORT_H
#define PYPROFD_SAMPLER_REPORT_H

#include "base/compat.h"

#include <stdint.h>

#include "base/status.h"

/** What a target's sampler counted (sampler/sampler.h): attempts and their outcomes. */
struct sampler_counts {
    uint64_t attempts; /* taken + failed */
    uint64_t taken;
    uint64_t failed;
    uint64_t failed_by[SAMPLE_STATUS_COUNT]; /* the reason of each failed attempt */
    uint64_t missed;
    uint64_t skipped;        /* due attempts not made on purpose (sampler_skip: CPU budget) */
    uint64_t thread_samples; /* thread stacks added to the profile */
    uint64_t retried;        /* attempts read a second time because the first read tore */
    /* idle threads (sampler/runwatch.h): attempts made without reading the
     * target (its threads had not run since the last read, or none was on a
     * CPU in cpu mode), and the thread samples they counted again */
    uint64_t saved;
    uint64_t reused;
    /* thread samples whose thread state named a TID that is none of the
     * target's threads (a process forked without CPython's after-fork hook:
     * docs/unwinder.md §6), by what they were counted as: the TID in the
     * thread's pthread, the process's only thread, a thread that does not
     * run here (wall mode only: cpu mode leaves it out), or unresolved (cpu
     * mode keeps those without the per-thread CPU check); part of
     * thread_samples */
    uint64_t tid_pthread, tid_only_thread, tid_gone, tid_unresolved;
};

#endif /* PYPROFD_SAMPLER_REPORT_H */
