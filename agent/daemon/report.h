/* SPDX-License-Identifier: MIT */
/*
 * report.h: what the daemon reports about processes and targets, as plain
 * types: the state of a process in the loop's table, why a target was
 * attached again, and what a target's native: full sampling counted (with a
 * target's sampler counts, sampler/report.h). The loop's snapshot
 * (daemon/loop.h) is made of them, and the HTTP side renders it
 * (exporters/pull/views.c), so this header includes nothing but base and
 * sampler/report.h: an exporter that shows /targets or /metrics compiles
 * without the unwinder, discovery or any CPython ABI header.
 *
 * Header only, apart from the name functions (targets.c, target.c).
 */
#ifndef PYPROFD_DAEMON_REPORT_H
#define PYPROFD_DAEMON_REPORT_H

#include "base/compat.h"

#include <stdint.h>

#include "base/status.h"
#include "sampler/report.h"

/** Where a process stands in the loop's table (daemon/targets.h describes each). */
enum proc_state {
    PROC_NEW,
    PROC_YOUNG,
    PROC_ACTIVE,
    PROC_NOT_PYTHON,
    PROC_UNSUPPORTED,
    PROC_UNREADABLE,
    PROC_DROPPED,
    PROC_FAILED,
    PROC_OVER_LIMIT,
    PROC_STATES
};

/** "new", "young", "active", ... (the /targets and /metrics names). */
const char *proc_state_name(enum proc_state s);
/** Whether /targets lists a process in state @a s (not "new" nor "not_python"). */
bool proc_state_listed(enum proc_state s);

/** Why a target is attached again (pyprofd_target_reattaches_total{reason}). */
enum target_reattach {
    TARGET_FAILING, /* every attempt failed for a while */
    TARGET_EXEC,    /* the process ran exec(): another program image */
    TARGET_REATTACH_REASONS,
};

/** "failing", "exec". */
const char *target_reattach_name(enum target_reattach r);

/**
 * native: full (sampler/nsampler.h): the kept kernel samples by how their
 * stacks came out, and the targets that fell back to markers.
 */
struct native_counts {
    uint64_t joined;      /* C and Python frames joined at every entry frame */
    uint64_t cut;         /* joined as far as the stack copy reached */
    uint64_t python_only; /* no C frame could be unwound: Python frames and <native> */
    uint64_t c_only;      /* a thread running no Python */
    uint64_t fallbacks;   /* targets attached with <native> markers: perf events refused */
    /* the libraries' files (unwind/native.h, struct native_files) */
    uint64_t debug_used, debug_refused, debug_stalled, huge_symtabs;
};

#endif /* PYPROFD_DAEMON_REPORT_H */
