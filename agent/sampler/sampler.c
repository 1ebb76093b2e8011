/* SPDX-License-Identifier: MIT */
/*
 * sampler.c: one target's sampling loop body (see sampler.h): schedule,
 * mode, thread names, ptrace stops, counting.
 */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fdcap.h"
#include "base/hash.h"
#include "base/strnum.h"
#include "base/utf8.h"
#include "sampler/nsampler.h"
#include "sampler/sampler.h"
#include "sampler/schedule.h"
#include "sampler/threadstat.h"
#include "unwind/mixed.h"
#include "unwind/native.h"
#include "perf/perfsample.h"

#include "sampler/sampler_internal.h"

/*
 * cpu mode reads each sampled thread's stat file every sample; keeping it
 * open saves an open and a close per thread and sample, within the
 * process-wide budget of kept descriptors (base/fdcap.h); beyond it a
 * thread's file is opened and closed per sample as before.
 */
static void sampler_thread_close(struct sampler_thread *t)
{
    if (t->stat_fd1) {
        close(t->stat_fd1 - 1);
        t->stat_fd1 = 0;
        fdcap_give();
    }
}

/* The cached kernel view of thread @ns_tid, looked up or refreshed (@refresh: its name too). */
struct sampler_thread *sampler_thread_get(struct sampler *s, uint64_t ns_tid, bool refresh)
{
    size_t i = (size_t)(ns_tid * HASH_GOLDEN >> 32) % SAMPLER_THREADS;
    struct sampler_thread *t = NULL;
    for (size_t k = 0; k < SAMPLER_THREADS; k++) {
        struct sampler_thread *c = &s->threads[(i + k) % SAMPLER_THREADS];
        if (c->ns_tid == ns_tid || c->ns_tid == 0) {
            t = c;
            break;
        }
    }
    if (!t)
        t = &s->threads[i]; /* full: evict */
    if (t->ns_tid != ns_tid) {
        pid_t host = 0;
        sampler_thread_close(t);
        *t = (struct sampler_thread){.ns_tid = ns_tid};
        if (threadstat_host_tid(s->opts.proc_root, s->pid, ns_tid, &host) == 0)
            t->host_tid = host;
    }
    if (t->host_tid &&
        (t->named_ns == 0 || (refresh && s->now_ns - t->named_ns > SAMPLER_NAME_REFRESH))) {
        char comm[sizeof(t->comm)];
        if (threadstat_comm(s->opts.proc_root, s->pid, t->host_tid, comm, sizeof(comm)))
            comm[0] = '\0';
        if (strcmp(comm, t->comm) != 0) {
            /*
             * Where a thread's name enters pyprofd: made valid UTF-8 (a
             * character the kernel's cut split is dropped), and counted once
             * per new name rather than once a second.
             */
            memcpy(t->comm, comm, sizeof(comm));
            size_t n = strlen(comm);
            if (n == SAMPLER_COMM_MAX)
                n = utf8_trim_cut(comm, n);
            (void)utf8_sanitize(t->name, sizeof(t->name), comm, n);
        }
        t->named_ns = s->now_ns ? s->now_ns : 1;
    }
    return t;
}

struct sampler_thread *sampler_thread(struct sampler *s, uint64_t ns_tid)
{
    return sampler_thread_get(s, ns_tid, true);
}

static bool sampler_on_cpu(void *ctx, uint64_t ns_tid)
{
    struct sampler *s = ctx;
    struct sampler_thread *t = sampler_thread(s, ns_tid);
    char state;
    if (!t->host_tid)
        return false;
    int known = s->watch ? runwatch_on_cpu(s->watch, t->host_tid) : -1;
    if (known >= 0) /* from its context switches, no /proc read */
        return known == 1;
    if (s->ntraced) { /* stopped by us: its state before the stop */
        for (size_t i = 0; i < s->ntraced; i++) {
            if (s->traced[i] == t->host_tid)
                return s->was_running[i];
        }
        return false;
    }
    if (!t->stat_fd1 && fdcap_take()) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%d/task/%d/stat", s->opts.proc_root, (int)s->pid,
                         (int)t->host_tid);
        int fd = n > 0 && (size_t)n < sizeof(path) ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (fd >= 0)
            t->stat_fd1 = fd + 1;
        else
            fdcap_give();
    }
    if (!t->stat_fd1)
        return threadstat_state(s->opts.proc_root, s->pid, t->host_tid, &state) == 0 &&
               state == 'R';
    char buf[1024];
    ssize_t n = pread(t->stat_fd1 - 1, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        sampler_thread_close(t); /* the thread is gone; a new one gets a new slot */
        return false;
    }
    buf[n] = '\0';
    return threadstat_parse_state(buf, (size_t)n, &state) == 0 && state == 'R';
}

/* --- blocking mode ----------------------------------------------------- */

/*
 * Each sample seizes every thread, interrupts it, waits for the stop, and
 * detaches after the sample (as CPython's own sampler does). Between samples
 * the target is not traced at all, so signals reach it as usual; one that
 * arrives during the stop is reported as a signal-delivery stop and handed
 * back with the detach.
 */
static int sampler_stop_all(struct sampler *s)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d/task", s->opts.proc_root, (int)s->pid);
    DIR *d = opendir(path);
    if (!d)
        return -ESRCH;
    struct dirent *de;
    int err = 0;
    s->ntraced = 0;
    while ((de = readdir(d)) != NULL && s->ntraced < SAMPLER_MAX_TRACED) {
        int64_t tid;
        if (strnum_parse_i64(de->d_name, 1, INT32_MAX, &tid))
            continue;
        /* cpu mode: whether it runs, asked before the stop makes it 't' */
        char state = 0;
        if (s->opts.mode == PROFILE_CPU &&
            threadstat_state(s->opts.proc_root, s->pid, (pid_t)tid, &state))
            state = 0;
        if (ptrace(PTRACE_SEIZE, (pid_t)tid, NULL, NULL) == 0) {
            s->pending[s->ntraced] = 0;
            s->was_running[s->ntraced] = state == 'R';
            s->traced[s->ntraced++] = (pid_t)tid;
            (void)ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL);
        } else if (errno == EPERM) {
            err = -EPERM;
        }
    }
    closedir(d);
    for (size_t i = 0; i < s->ntraced; i++) {
        int status;
        if (waitpid(s->traced[i], &status, __WALL) < 0 || WIFEXITED(status) ||
            WIFSIGNALED(status)) {
            /* gone: the last one takes its place (not waited for yet) */
            s->ntraced--;
            s->traced[i] = s->traced[s->ntraced];
            s->was_running[i] = s->was_running[s->ntraced];
            i--;
            continue;
        }
        /* a signal on its way to the thread, not our interrupt: keep it */
        if (WIFSTOPPED(status) && (status >> 16) != PTRACE_EVENT_STOP)
            s->pending[i] = WSTOPSIG(status);
    }
    return err;
}

static void sampler_resume_all(struct sampler *s)
{
    for (size_t i = 0; i < s->ntraced; i++)
        (void)ptrace(PTRACE_DETACH, s->traced[i], NULL, (void *)(intptr_t)s->pending[i]);
    s->ntraced = 0;
}

/*
 * native: full's sink: each joined stack goes to every sink in full (the
 * kernel's samples carry no "unchanged" to coalesce on).
 */
static int sampler_native_add(void *arg, const struct sink_sample *x)
{
    struct sampler *s = arg;
    for (size_t q = 0; q < s->nsinks; q++) {
        const struct sample_sink *sk = &s->sinks[q];
        if (sk->add && sk->add(sk->arg, x) == 0 && q == 0)
            s->counts.thread_samples++;
    }
    return 0;
}

/* Opens native: full, or says why not and falls back to markers. */
static void sampler_native_open(struct sampler *s, uint64_t now_ns)
{
    char why[256];
    struct sample_sink fan = {.add = sampler_native_add, .arg = s};
    struct nsampler_opts no = {
        .period_ns = s->opts.interval_ns,
        .stack_bytes = s->opts.native_stack,
        .unwind_flags = s->opts.unwind_flags,
        .proc_root = s->opts.proc_root,
        .main_only = !(s->opts.unwind_flags & UNWIND_ALL_THREADS),
    };
    s->native_period = s->opts.interval_ns;
    if (nsampler_new(s->pid, s->u, &fan, &no, &s->ns, why, sizeof(why)) == 0) {
        snprintf(s->native_state, sizeof(s->native_state), "full");
        /* the schedule only drains and looks for new threads */
        schedule_init(&s->sched, now_ns, SAMPLER_NATIVE_DRAIN_NS);
        return;
    }
    s->ns = NULL;
    s->opts.unwind_flags |= UNWIND_NATIVE;
    snprintf(s->native_state, sizeof(s->native_state), "markers: %s", why);
}

/* Sink @q changed: no thread's last stack is in it. */
static void sampler_forget_sink(struct sampler *s, size_t q)
{
    for (size_t i = 0; i < SAMPLER_THREADS; i++)
        s->threads[i].added[q] = false;
}

/* --- public ------------------------------------------------------------ */

int sampler_new(pid_t pid, struct unwinder *u, const struct sample_sink *window,
                const struct sampler_opts *opts, uint64_t now_ns, struct sampler **out)
{
    if (opts->interval_ns == 0 || (unsigned)opts->mode >= PROFILE_MODES || !window || !window->add)
        return -EINVAL;
    /* the kernel's samples are CPU time; with blocking, any mode (the exact path) */
    if (opts->native_full && (opts->async || (opts->mode != PROFILE_CPU && !opts->blocking)))
        return -EINVAL;
    struct sampler *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->pid = pid;
    s->u = u;
    s->sinks[0] = *window;
    s->nsinks = 1;
    s->opts = *opts;
    /* the config that named it may be replaced while the sampler lives */
    const char *root = opts->proc_root ? opts->proc_root : "/proc";
    size_t rlen = strlen(root) + 1;
    char *copy = alloc_malloc(rlen);
    if (!copy) {
        alloc_free(s);
        return -ENOMEM;
    }
    memcpy(copy, root, rlen);
    s->opts.proc_root = copy;
    schedule_init(&s->sched, now_ns, opts->interval_ns);
    rand_init(&s->rng, (now_ns ^ ((uint64_t)(uint32_t)pid << 32) ^ (uint64_t)(uintptr_t)s) | 1u);
    s->last_attempt_ns = now_ns;
    if (opts->native_full && !opts->blocking)
        sampler_native_open(s, now_ns);
    if (opts->mode == PROFILE_CPU && !s->ns)
        unwinder_set_on_cpu(u, sampler_on_cpu, s);
    /* idle threads: not where the kernel drives or threads are stopped, nor
     * where nothing could be counted again (async wall mode) */
    if (opts->idle_check != RUNWATCH_OFF && !s->ns && !opts->blocking &&
        !(opts->async && opts->mode != PROFILE_CPU)) {
        struct runwatch_opts wo = {
            .proc_root = s->opts.proc_root,
            .all_threads = (opts->unwind_flags & UNWIND_ALL_THREADS) != 0,
            .how = opts->idle_check,
        };
        if (runwatch_new(pid, &wo, now_ns, &s->watch)) {
            sampler_free(s);
            return -ENOMEM;
        }
    }
    if (opts->blocking) {
        s->traced = alloc_calloc(SAMPLER_MAX_TRACED, sizeof(*s->traced));
        s->pending = alloc_calloc(SAMPLER_MAX_TRACED, sizeof(*s->pending));
        s->was_running = alloc_calloc(SAMPLER_MAX_TRACED, sizeof(*s->was_running));
        bool ready = s->traced && s->pending && s->was_running;
        /* find out now whether the threads can be stopped at all */
        int err = ready ? sampler_stop_all(s) : -ENOMEM;
        bool stopped = s->ntraced > 0;
        if (ready)
            sampler_resume_all(s);
        if (err || !stopped) {
            sampler_free(s);
            return err ? err : -EPERM;
        }
        char why[256];
        if (opts->native_full && sampler_exact_new(s, why, sizeof(why)) == 0) {
            snprintf(s->native_state, sizeof(s->native_state), "full");
        } else if (opts->native_full) {
            s->opts.unwind_flags |= UNWIND_NATIVE;
            snprintf(s->native_state, sizeof(s->native_state), "markers: %s", why);
        }
    }
    *out = s;
    return 0;
}

void sampler_free(struct sampler *s)
{
    if (!s)
        return;
    if (s->traced && s->pending && s->was_running)
        sampler_resume_all(s); /* never leave the target stopped */
    if (s->opts.mode == PROFILE_CPU && !s->ns)
        unwinder_set_on_cpu(s->u, NULL, NULL);
    nsampler_free(s->ns);
    sampler_exact_free(s->exact);
    runwatch_free(s->watch);
    for (size_t i = 0; i < SAMPLER_THREADS; i++)
        sampler_thread_close(&s->threads[i]);
    alloc_free(s->traced);
    alloc_free(s->pending);
    alloc_free(s->was_running);
    alloc_free((char *)s->opts.proc_root);
    alloc_free(s);
}

uint64_t sampler_due(const struct sampler *s)
{
    return schedule_due(&s->sched) + s->jitter;
}

/*
 * Each attempt after the first is made at a random point of its whole
 * interval (schedule_jitter()), not on the grid. A random point of only part
 * of the interval is not enough: a target whose period is the interval
 * (shares.py at 100 Hz) would only ever be seen in that part of its cycle.
 * The schedule itself (due times, missed counting) does not move.
 */
static void sampler_next_jitter(struct sampler *s, uint64_t now_ns)
{
    if (s->ns) /* draining needs no jitter */
        return;
    s->jitter = schedule_jitter(schedule_due(&s->sched), s->opts.interval_ns, now_ns, &s->rng);
}

static unsigned sampler_unwind_flags(const struct sampler *s)
{
    unsigned f =
        s->opts.unwind_flags & (UNWIND_ALL_THREADS | UNWIND_NATIVE | UNWIND_NO_GC | UNWIND_OPCODES);
    if (s->exact)
        f |= UNWIND_ENTRIES; /* where the C frames join */
    switch (s->opts.mode) {
    case PROFILE_CPU:
        return f | UNWIND_ONLY_ON_CPU;
    case PROFILE_GIL:
        return f | UNWIND_ONLY_GIL;
    case PROFILE_EXCEPTION:
        return f | UNWIND_ONLY_EXCEPTION;
    case PROFILE_WALL:
    default:
        return f;
    }
}

/*
 * A thread sampled while it runs no Python code at all (the interpreter
 * starting or finishing, a C thread holding a thread state): its time is
 * counted under this marker, so no sample the summary counts is missing from
 * the profile (consumers drop samples without locations).
 */
static const struct unwind_frame sampler_interpreter_frame = {
    .kind = UNWIND_FRAME_NATIVE,
    .function = "<interpreter>",
    .file = "~",
};

/*
 * Gives one stack of thread @t to every sink, under the coalescing contract
 * (sampler.h). @plain: the thread's own stack, which the unwinder's
 * "unchanged" flag may let a sink count again without looking at it; a
 * logical (asyncio) stack is given in full and makes the thread's next own
 * stack a full add too.
 */
static void sampler_add(struct sampler *s, const struct unwind_thread *t,
                        const struct unwind_frame *frames, size_t nframes, const char *task,
                        bool plain, bool again_read)
{
    if (nframes == 0) {
        frames = &sampler_interpreter_frame;
        nframes = 1;
    }
    /* counted again without a read: the thread did not run, so neither did
     * its name change (it is read again with the next read) */
    struct sampler_thread *k = sampler_thread_get(s, t->native_thread_id, !again_read);
    struct sink_sample x = {
        .frames = frames,
        .nframes = nframes,
        .thread_id = t->native_thread_id,
        .interp_id = t->interp_id,
        .thread_name = k->name,
        .task = task,
        .nanos = (int64_t)s->opts.interval_ns,
        .at_ns = s->now_ns,
    };
    struct sink_sample again = x;
    again.frames = NULL;
    again.nframes = 0;
    bool same = plain && (t->unchanged || again_read) && k->last_key == t->stack_key;
    for (size_t q = 0; q < s->nsinks; q++) {
        const struct sample_sink *sk = &s->sinks[q];
        if (!sk->add)
            continue;
        bool took = same && k->added[q] && sk->repeat && sk->repeat(sk->arg, &again) == 0;
        if (!took)
            took = sk->add(sk->arg, &x) == 0; /* a full window drops and counts it itself */
        k->added[q] = plain && took;
        if (q == 0 && took)
            s->counts.thread_samples++;
    }
    if (plain)
        k->last_key = t->stack_key;
}

/* Whether an attempt failed only because something moved while it was read. */
static bool sampler_torn(int err, enum sample_status why, const struct unwind_result *r,
                         const struct asyncio_result *ar)
{
    if (err)
        return status_torn(why);
    for (size_t i = 0; ar && i < ar->nsamples; i++) {
        if (status_torn(ar->samples[i].status))
            return true;
    }
    for (size_t i = 0; !ar && i < r->nthreads; i++) {
        if (status_torn(r->threads[i].status))
            return true;
    }
    return false;
}

/* Counts an attempt answered without a read: @asleep: none on a CPU; else the last read again. */
static void sampler_again(struct sampler *s, bool asleep)
{
    if (!asleep) {
        const struct unwind_result *r = s->last;
        for (size_t i = 0; i < r->nthreads; i++) {
            const struct unwind_thread *t = &r->threads[i];
            sampler_add(s, t, t->frames, t->nframes, NULL, true, true);
            s->counts.reused++;
        }
    }
    s->counts.saved++;
    s->counts.taken++;
}

/*
 * Idle threads: before the read, whether it is needed at all. Counts the
 * attempt (taken, saved) and returns true when the watch proves that no
 * thread ran since the last read (its stacks are counted again, as the same
 * stacks: the coalescing contract holds) or, in cpu mode, that none is on a
 * CPU (nothing is kept, as the read would have found).
 */
static bool sampler_unread(struct sampler *s, uint64_t now_ns)
{
    enum runwatch_verdict v = runwatch_check(s->watch, now_ns, s->opts.mode == PROFILE_CPU);
    if (v == RUNWATCH_READ || (v == RUNWATCH_SAME && !s->last)) {
        s->quiet = 0;
        return false;
    }
    s->park_asleep = v == RUNWATCH_ASLEEP;
    sampler_again(s, v == RUNWATCH_ASLEEP);
    /* parked only after this many checks in a row saw no thread switched */
    if (runwatch_moved(s->watch))
        s->quiet = 0;
    else if (s->quiet < SAMPLER_PARK_AFTER)
        s->quiet++;
    return true;
}

/* After a read: the result that may be counted again (NULL: none). */
static void sampler_read_done(struct sampler *s, uint64_t now_ns, const struct unwind_result *r)
{
    s->last = r;
    if (s->watch)
        runwatch_read(s->watch, now_ns, r != NULL);
}

/*
 * How late this attempt is made after the middle of its interval, into the
 * average (late_ns, weight 1/8): see sampler_catch_up(). Not an attempt of a
 * catch-up (more than an interval late), nor one due before the last unpark
 * (made at once, as late as the wake-up came).
 */
static void sampler_note_late(struct sampler *s, uint64_t now_ns)
{
    uint64_t grid = schedule_due(&s->sched), due = grid + s->jitter;
    if (now_ns < due || due < s->unparked_ns || now_ns - due > s->opts.interval_ns)
        return;
    int64_t late = (int64_t)(now_ns - grid) - (int64_t)(s->opts.interval_ns / 2);
    s->late_ns += (late - s->late_ns) / 8;
}

int sampler_attempt(struct sampler *s, uint64_t now_ns)
{
    if (s->ns) {
        schedule_attempted(&s->sched, now_ns);
        s->last_attempt_ns = now_ns;
        return nsampler_drain(s->ns, now_ns);
    }
    s->now_ns = now_ns;
    sampler_note_late(s, now_ns);
    schedule_attempted(&s->sched, now_ns);
    sampler_next_jitter(s, now_ns);
    s->last_attempt_ns = now_ns;
    s->counts.attempts++;
    if (s->watch && sampler_unread(s, now_ns))
        return 0;

    if (s->opts.blocking)
        (void)sampler_stop_all(s); /* a thread that cannot be stopped is sampled running */
    const struct unwind_result *r = NULL;
    enum sample_status why = SAMPLE_OK;
    const struct asyncio_result *ar = NULL;
    bool gone = false;
    int err = 0;
    /*
     * A stack or task graph that changed while it was read (a torn read) is
     * read again at once, one time: the second read almost always holds, and
     * a failed attempt would leave its moment out of the profile, more often
     * for code whose stacks change fast. The retry costs a second walk only
     * when the first tore; it is counted (retried).
     */
    for (int attempt = 0; attempt < 2; attempt++) {
        ar = NULL;
        gone = false;
        err = unwinder_sample(s->u, sampler_unwind_flags(s), &r, &why);
        /* the task graph is read while the threads are still stopped */
        if (!err && s->opts.async)
            gone = asyncio_sample(s->opts.async, r, &ar) == -ESRCH;
        if (attempt > 0 || gone || !sampler_torn(err, why, r, ar))
            break;
        s->counts.retried++;
    }
    /* the exact path: each thread's registers and stack while it is stopped */
    for (size_t i = 0; s->exact && !err && !gone && i < r->nthreads && i < SAMPLER_EXACT_THREADS;
         i++) {
        if (r->threads[i].status == SAMPLE_OK)
            sampler_exact_capture(s, i, &r->threads[i]);
        else
            sampler_exact_forget(s, i);
    }
    /* The threads are resumed before the (local) aggregation work. */
    if (s->opts.blocking)
        sampler_resume_all(s);
    if (err || gone) {
        sampler_read_done(s, now_ns, NULL);
        why = err ? why : SAMPLE_PROCESS_GONE;
        s->counts.failed++;
        s->counts.failed_by[why]++;
        return why == SAMPLE_PROCESS_GONE ? -ESRCH : 0;
    }
    enum sample_status failed = SAMPLE_OK;
    size_t n = ar ? ar->nsamples : r->nthreads;
    for (size_t i = 0; i < n; i++) {
        const struct asyncio_sample *as = ar ? &ar->samples[i] : NULL;
        const struct unwind_thread *t = &r->threads[as ? as->thread : i];
        enum sample_status st = as ? as->status : t->status;
        if (st != SAMPLE_OK) {
            if (failed == SAMPLE_OK)
                failed = st;
            continue;
        }
        const struct unwind_frame *mf;
        size_t mn;
        if (as)
            sampler_add(s, t, as->frames, as->nframes, as->task_name, as->task_name == NULL, false);
        else if (!s->exact)
            sampler_add(s, t, t->frames, t->nframes, NULL, true, false);
        else if (sampler_exact_join(s, i, t, &mf, &mn))
            sampler_add(s, t, mf, mn, NULL, false, false); /* (joined stacks are not coalesced) */
    }
    if (failed != SAMPLE_OK) {
        sampler_read_done(s, now_ns, NULL);
        s->counts.failed++;
        s->counts.failed_by[failed]++;
        return failed == SAMPLE_PROCESS_GONE ? -ESRCH : 0;
    }
    /* plain stacks only can be counted again */
    sampler_read_done(s, now_ns, ar || s->exact ? NULL : r);
    s->counts.taken++;
    return 0;
}

bool sampler_parkable(const struct sampler *s)
{
    return s->watch && !s->parked && !s->no_park && s->quiet >= SAMPLER_PARK_AFTER &&
           (s->park_asleep || s->last) && runwatch_how(s->watch) == RUNWATCH_PERF;
}

int sampler_park(struct sampler *s, int epfd, uint64_t token)
{
    if (!sampler_parkable(s))
        return -ENOTSUP;
    int err = runwatch_park(s->watch, epfd, token);
    if (!err)
        s->parked = true;
    else if (err == -EAGAIN)
        s->quiet = 0; /* a thread ran meanwhile: idle again first */
    else
        s->no_park = true; /* (a waker refused: the locked-memory limit, ...) for good */
    return err;
}

bool sampler_parked(const struct sampler *s)
{
    return s->parked;
}

/* Counts each attempt due before @until as answered the way the park began. */
static void sampler_catch_up_to(struct sampler *s, uint64_t until)
{
    uint64_t due;
    while ((due = sampler_due(s)) < until) {
        s->now_ns = due;
        schedule_attempted(&s->sched, due);
        sampler_next_jitter(s, due);
        s->last_attempt_ns = due;
        s->counts.attempts++;
        sampler_again(s, s->park_asleep);
    }
}

/*
 * While parked, the attempts due so far, as they would have been made: up to
 * now while no thread was switched since the park (the wakers' rings have
 * not moved), else up to the first switch (the wakers' records carry their
 * times); what is due after it is made by the schedule, reading, once the
 * loop unparks the target (at once: as soon as the wake-up arrives).
 *
 * An attempt on the schedule is made some time after it falls due (the
 * loop's tick, its timer slack, the wake-up), and it sees the thread as it
 * is then. So the attempts due shortly before the first switch would have
 * seen the thread run: they are left to the unpark too, which reads them at
 * once. Counting them as the park began (the thread idle) lost a lateness's
 * worth of every run that follows a park: a thread that works 2 ms every
 * 100 ms was seen at half its work (issue 37).
 *
 * How many: on the schedule, the attempt of interval [g, g + interval) is
 * made at g + interval / 2 + late_ns on average (late_ns is measured so),
 * and a caught-up one is due at a uniform point of its interval, so at
 * g + interval / 2 on average: the attempts due within late_ns before the
 * switch. (Not the lateness after the due time: a late attempt draws the
 * next one's point from what is left of its interval, so the schedule's
 * points lie later than uniform ones, and that lateness is the smaller:
 * 2 ms runs came out at 0.75-0.9 of their time with it, at 1 kHz.) For the
 * same reason the catch-up while no thread ran stops late_ns before now.
 */
void sampler_catch_up(struct sampler *s, uint64_t now_ns)
{
    if (!s->parked)
        return;
    uint64_t woke, until = now_ns + 1;
    if (!runwatch_still(s->watch)) {
        if (!runwatch_woke_at(s->watch, &woke))
            return;
        if (woke < until)
            until = woke;
    }
    uint64_t late = s->late_ns > 0 ? (uint64_t)s->late_ns : 0;
    sampler_catch_up_to(s, until > late ? until - late : 0);
}

void sampler_unpark(struct sampler *s, uint64_t now_ns, int epfd)
{
    if (!s->parked)
        return;
    sampler_catch_up(s, now_ns);
    runwatch_unpark(s->watch, epfd);
    s->parked = false;
    s->quiet = 0;
    s->unparked_ns = now_ns;
}

void sampler_skip(struct sampler *s, uint64_t now_ns, uint64_t n)
{
    if (s->ns) { /* the budget lowers the kernel's rate instead (sampler_native_factor) */
        (void)sampler_attempt(s, now_ns);
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        schedule_attempted(&s->sched, now_ns);
    sampler_next_jitter(s, now_ns);
    s->last_attempt_ns = now_ns;
    s->counts.skipped += n;
}

void sampler_idle(struct sampler *s, uint64_t now_ns)
{
    schedule_attempted(&s->sched, now_ns);
    sampler_next_jitter(s, now_ns);
    s->last_attempt_ns = now_ns;
}

void sampler_set_window(struct sampler *s, const struct sample_sink *window)
{
    s->sinks[0] = *window;
    sampler_forget_sink(s, 0);
}

int sampler_add_tap(struct sampler *s, const struct sample_sink *tap)
{
    for (size_t q = 1; q < SAMPLER_SINKS; q++) {
        if (!s->sinks[q].add) {
            s->sinks[q] = *tap;
            sampler_forget_sink(s, q);
            if (q >= s->nsinks)
                s->nsinks = q + 1;
            return 0;
        }
    }
    return -EBUSY;
}

void sampler_remove_tap(struct sampler *s, const void *arg)
{
    for (size_t q = 1; q < SAMPLER_SINKS; q++) {
        if (s->sinks[q].add && s->sinks[q].arg == arg)
            s->sinks[q] = (struct sample_sink){0};
    }
    while (s->nsinks > 1 && !s->sinks[s->nsinks - 1].add)
        s->nsinks--;
}

/* native: full's counts as the sampler's: attempts are the kernel's samples. */
static struct sampler_counts sampler_native_as_counts(const struct sampler *s)
{
    struct nsampler_counts n = nsampler_counts(s->ns);
    struct sampler_counts c = {
        .attempts = n.samples,
        .taken = n.merged + n.cut + n.python + n.native,
        .failed = n.disagree + n.late + n.failed,
        .missed = n.lost,
        .thread_samples = s->counts.thread_samples,
    };
    memcpy(c.failed_by, n.failed_by, sizeof(c.failed_by));
    return c;
}

const char *sampler_idle_check(const struct sampler *s)
{
    return s->watch ? runwatch_describe(s->watch) : NULL;
}

const char *sampler_native(const struct sampler *s)
{
    return s->native_state[0] ? s->native_state : NULL;
}

int sampler_native_fd(const struct sampler *s)
{
    return s->ns ? nsampler_fd(s->ns) : -1;
}

int sampler_native_drain(struct sampler *s, uint64_t now_ns)
{
    return s->ns ? nsampler_drain(s->ns, now_ns) : 0;
}

void sampler_native_factor(struct sampler *s, double factor)
{
    if (!s->ns || !(factor > 0))
        return;
    double p = (double)s->native_period / (factor < 1 ? factor : 1);
    uint64_t period = p >= 1e12 ? 1000000000000ull : (uint64_t)p;
    if (period != nsampler_period(s->ns))
        (void)nsampler_set_period(s->ns, period); /* a thread that refuses keeps its period */
}

bool sampler_native_counts(const struct sampler *s, struct nsampler_counts *out)
{
    if (s->exact) {
        *out = sampler_exact_counts(s);
        return true;
    }
    if (!s->ns)
        return false;
    *out = nsampler_counts(s->ns);
    return true;
}

struct sampler_counts sampler_counts(const struct sampler *s)
{
    if (s->ns)
        return sampler_native_as_counts(s);
    struct sampler_counts c = s->counts;
    c.missed = schedule_given_up(&s->sched);
    return c;
}

struct sampler_counts sampler_counts_final(const struct sampler *s)
{
    if (s->ns)
        return sampler_native_as_counts(s);
    struct sampler_counts c = s->counts;
    /* an attempt is late once its whole interval (where its random point
     * lies) has gone by: those due up to one interval before the last */
    uint64_t interval = s->opts.interval_ns;
    uint64_t late = s->last_attempt_ns >= interval
                        ? schedule_missed(&s->sched, s->last_attempt_ns - interval)
                        : 0;
    uint64_t lost = schedule_given_up(&s->sched);
    c.missed = late > lost ? late : lost;
    return c;
}
