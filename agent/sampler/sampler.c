/* SPDX-License-Identifier: MIT */
/*
 * sampler.c: one target's sampler (see sampler.h): the schedule and its
 * jitter, the sinks and their coalescing contract, the cache of the target's
 * threads (names, host TIDs, cpu mode's kept /proc files and credits), the
 * counts; and the choice of the source that gets each attempt's stacks
 * (source.h), to which every attempt and every strategy's question is handed.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fdcap.h"
#include "base/hash.h"
#include "base/rand.h"
#include "base/utf8.h"
#include "sampler/cpucredit.h"
#include "sampler/schedule.h"
#include "sampler/source.h"
#include "sampler/threadstat.h"
#include "unwind/otel_sdk.h"

#define SAMPLER_THREADS      256u          /* threads whose name and host TID are cached */
#define SAMPLER_NAME_REFRESH 1000000000ull /* re-read a thread's name after 1 s */
#define SAMPLER_COMM_MAX     15u /* a thread's name as the kernel keeps it (TASK_COMM_LEN - 1) */
#define SAMPLER_SINKS        (1 + SAMPLER_MAX_TAPS) /* [0]: the window, then the taps */

/* A target thread as the kernel knows it (cpu mode's fields where others leave padding). */
struct sampler_thread {
    uint64_t ns_tid; /* 0 = free slot */
    pid_t host_tid;
    int sched_fd1; /* cpu mode: /proc/PID/task/TID/schedstat kept open, fd + 1; 0: none */
    uint64_t named_ns;
    char comm[SAMPLER_COMM_MAX + 1];                        /* as read: any bytes */
    char name[SAMPLER_COMM_MAX * UTF8_REPLACEMENT_LEN + 1]; /* ... as valid UTF-8 */
    uint64_t last_key;         /* stack_key of the thread's last own stack given to the sinks */
    bool added[SAMPLER_SINKS]; /* ... and whether each sink took it (the coalescing contract) */
    uint8_t paid;              /* cpu mode: samples the attempt paid_at counts the thread for */
    int stat_fd1;              /* ... its stat file kept open, as sched_fd1 */
    uint64_t paid_at;          /* ... that attempt (counts.attempts) */
    struct cpucredit credit;   /* ... its CPU time earned, and paid at 'R' attempts */
};

_Static_assert(CPUCREDIT_MAX_PAY <= UINT8_MAX, "paid holds a pay");

struct sampler {
    /* what every attempt touches first, together (an idle target's attempt
     * touches little else: docs/performance.md, issue 26) */
    struct sample_source *src; /* the head of the chain: a filter, or the source */
    /* the last read's result, while it may be counted again (plain stacks,
     * nothing failed): owned by the unwinder, untouched until its next sample */
    const struct unwind_result *last;
    struct schedule sched;
    uint64_t last_attempt_ns;
    uint64_t now_ns; /* of the attempt in progress */
    uint64_t jitter; /* the next attempt is made this long after it is due */
    bool no_jitter;  /* the schedule only drains (the kernel's source) */
    struct rand_state rng;
    struct sampler_counts counts;
    struct sampler_opts opts;
    pid_t pid;
    struct unwinder *u;
    bool on_cpu_set;   /* cpu mode's test is ours (unwinder_set_on_cpu()) */
    bool no_schedstat; /* cpu mode: the kernel keeps none (CONFIG_SCHED_INFO off) */
    /* [0]: the window (its takes count as thread samples); then the taps,
     * add NULL = a free slot */
    struct sample_sink sinks[SAMPLER_SINKS];
    size_t nsinks;          /* sinks[nsinks...] are free */
    char native_state[320]; /* sampler_native(): "" when not asked */
    /* the trace context (sampler_set_trace_context()): the reader, and the
     * span each cached thread was last given in (as threads[]), NULL: none */
    struct otel_thread *tctx;
    struct otel_sdk *sdk;
    struct sample_span *spans;
    struct sampler_thread threads[SAMPLER_THREADS];
};

/* ---- the thread cache -------------------------------------------------------- */

/*
 * cpu mode reads each sampled thread's schedstat, and its stat file, at
 * every sample (sampler_credit()); keeping them open saves an open and a
 * close per thread and sample, within the process-wide budget of kept
 * descriptors (base/fdcap.h); beyond it a thread's file is opened and closed
 * per read.
 */
static void sampler_thread_close_fd(int *fd1)
{
    if (*fd1) {
        close(*fd1 - 1);
        *fd1 = 0;
        fdcap_give();
    }
}

static void sampler_thread_close(struct sampler_thread *t)
{
    sampler_thread_close_fd(&t->stat_fd1);
    sampler_thread_close_fd(&t->sched_fd1);
}

/* The cached kernel view of thread @ns_tid, looked up or refreshed (@refresh: its name too). */
static struct sampler_thread *sampler_thread_get(struct sampler *s, uint64_t ns_tid, bool refresh)
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
        if (s->spans)
            s->spans[t - s->threads] = (struct sample_span){0};
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

/*
 * Thread @t's /proc file @name into @buf (at most @len - 1 bytes): one
 * pread of the file kept open in *@fd1, else opened and closed for it.
 * Returns the bytes read, or 0 (the thread is gone: the kept file is closed).
 */
static size_t sampler_thread_read(const struct sampler *s, const struct sampler_thread *t, int *fd1,
                                  const char *name, char *buf, size_t len)
{
    int fd = *fd1 - 1;
    bool kept = fd >= 0;
    if (!kept) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%d/task/%d/%s", s->opts.proc_root, (int)s->pid,
                         (int)t->host_tid, name);
        fd = n > 0 && (size_t)n < sizeof(path) ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (fd < 0)
            return 0;
        if (fdcap_take()) {
            *fd1 = fd + 1;
            kept = true;
        }
    }
    ssize_t n = pread(fd, buf, len - 1, 0);
    if (!kept)
        close(fd);
    else if (n <= 0)
        sampler_thread_close_fd(fd1);
    return n > 0 ? (size_t)n : 0;
}

/*
 * cpu mode: what thread @t's credit pays now (sampler/cpucredit.h). Its CPU
 * time is @cpu_ns when a source read it at this attempt, else its schedstat
 * (one pread); when a sample is owed and no source saw it running or
 * waiting (@known CPUCREDIT_RUNNABLE), its state from its stat file. A
 * kernel without schedstat: both from its stat file, the CPU time in clock
 * ticks.
 */
static unsigned sampler_credit(const struct sampler *s, struct sampler_thread *t, int known,
                               uint64_t cpu_ns)
{
    char buf[1024];
    if (cpu_ns == CPUCREDIT_NO_TIME && s->no_schedstat) {
        /* the last resort: stat's utime + stime, in clock ticks (10 ms) */
        char state;
        uint64_t ticks;
        size_t n = sampler_thread_read(s, t, &t->stat_fd1, "stat", buf, sizeof(buf));
        if (!n || threadstat_parse_cputime(buf, n, &state, &ticks))
            return 0;
        return cpucredit_look(&t->credit, ticks * threadstat_tick_ns(),
                              known == CPUCREDIT_RUNNABLE || state == 'R', s->opts.interval_ns);
    }
    if (cpu_ns == CPUCREDIT_NO_TIME) {
        uint64_t v[3];
        size_t n = sampler_thread_read(s, t, &t->sched_fd1, "schedstat", buf, sizeof(buf));
        if (!n || threadstat_parse_schedstat(buf, n, v))
            return 0;
        cpu_ns = v[0];
    }
    if (!cpucredit_earn(&t->credit, cpu_ns, s->opts.interval_ns))
        return 0; /* nothing owed: its state does not matter */
    if (known != CPUCREDIT_RUNNABLE) {
        char state;
        size_t n = sampler_thread_read(s, t, &t->stat_fd1, "stat", buf, sizeof(buf));
        if (!n || threadstat_parse_state(buf, n, &state) || state != 'R')
            return 0;
    }
    return cpucredit_pay(&t->credit, s->opts.interval_ns);
}

/*
 * cpu mode's test of a thread (issue 38: on a CPU, not waiting for one):
 * asleep by the first source that knows, else what its credit pays. How many
 * samples it counts for is kept for sampler_give(); asked again in the same
 * attempt (a torn read's second walk), the answer is the same.
 */
static bool sampler_on_cpu(void *ctx, uint64_t ns_tid)
{
    struct sampler *s = ctx;
    struct sampler_thread *t = sampler_thread_get(s, ns_tid, true);
    if (!t->host_tid)
        return false;
    if (t->paid_at == s->counts.attempts)
        return t->paid > 0;
    int known = CPUCREDIT_ASK;
    uint64_t cpu_ns = CPUCREDIT_NO_TIME;
    for (const struct sample_source *src = s->src; src && known == CPUCREDIT_ASK; src = src->next)
        known = src->ops->on_cpu ? src->ops->on_cpu(src, t->host_tid, &cpu_ns) : CPUCREDIT_ASK;
    t->paid = known == CPUCREDIT_OFF ? 0 : (uint8_t)sampler_credit(s, t, known, cpu_ns);
    t->paid_at = s->counts.attempts;
    return t->paid > 0;
}

/* The target's threads, for the unwinder's check of the TIDs its thread states name. */
static int sampler_tasks(void *ctx, uint64_t *tids, size_t max, size_t *n)
{
    const struct sampler *s = ctx;
    return threadstat_list_ns(s->opts.proc_root, s->pid, tids, max, n);
}

/* Counts a thread sample whose thread state named a TID not of the target. */
static void sampler_count_tid(struct sampler *s, enum unwind_tid_source how)
{
    switch (how) {
    case UNWIND_TID_PTHREAD:
        s->counts.tid_pthread++;
        break;
    case UNWIND_TID_ONLY_THREAD:
        s->counts.tid_only_thread++;
        break;
    case UNWIND_TID_GONE:
        s->counts.tid_gone++;
        break;
    case UNWIND_TID_UNRESOLVED:
        s->counts.tid_unresolved++;
        break;
    default:
        break;
    }
}

/* ---- the sinks ------------------------------------------------------------------ */

/* Sink @q changed: no thread's last stack is in it. */
static void sampler_forget_sink(struct sampler *s, size_t q)
{
    for (size_t i = 0; i < SAMPLER_THREADS; i++)
        s->threads[i].added[q] = false;
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

void sampler_give(struct sampler *s, const struct unwind_thread *t,
                  const struct unwind_frame *frames, size_t nframes, const char *task,
                  const struct sample_span *span, bool plain, bool again_read)
{
    if (nframes == 0) {
        frames = &sampler_interpreter_frame;
        nframes = 1;
    }
    /* counted again without a read: the thread did not run, so neither did
     * its name change (it is read again with the next read) */
    struct sampler_thread *k = sampler_thread_get(s, t->native_thread_id, !again_read);
    /* ... nor its span; a thread whose span changed is not a repeat */
    bool same_span = true;
    if (s->spans) {
        struct sample_span *last = &s->spans[k - s->threads];
        if (again_read) {
            span = last;
        } else {
            struct sample_span now = span ? *span : (struct sample_span){0};
            same_span = now.set == last->set &&
                        (!now.set || (memcmp(now.span_id, last->span_id, 8) == 0 &&
                                      memcmp(now.trace_id, last->trace_id, 16) == 0));
            *last = now;
        }
    }
    struct sink_sample x = {
        .frames = frames,
        .nframes = nframes,
        .thread_id = t->native_thread_id,
        .interp_id = t->interp_id,
        .thread_name = k->name,
        .task = task,
        .span = span && span->set ? span : NULL,
        .nanos = (int64_t)s->opts.interval_ns,
        .at_ns = s->now_ns,
    };
    struct sink_sample again = x;
    again.frames = NULL;
    again.nframes = 0;
    bool same = plain && same_span && (t->unchanged || again_read) && k->last_key == t->stack_key;
    /* cpu mode's credit may pay more than one interval now (sampler_on_cpu()) */
    unsigned times = !again_read && k->paid_at == s->counts.attempts && k->paid > 1 ? k->paid : 1;
    for (unsigned rep = 0; rep < times; rep++) {
        for (size_t q = 0; q < s->nsinks; q++) {
            const struct sample_sink *sk = &s->sinks[q];
            if (!sk->add)
                continue;
            bool took = same && k->added[q] && sk->repeat && sk->repeat(sk->arg, &again) == 0;
            if (!took)
                took = sk->add(sk->arg, &x) == 0; /* a full window drops and counts it itself */
            k->added[q] = plain && took;
            if (q == 0 && took) {
                s->counts.thread_samples++;
                sampler_count_tid(s, t->tid_source);
            }
        }
        if (plain)
            k->last_key = t->stack_key;
        same = plain; /* the next pay is this stack again */
    }
}

/* Thread cache slot @k paid at this attempt: owed again. */
static void sampler_refund(struct sampler *s, struct sampler_thread *k)
{
    if (k->paid_at == s->counts.attempts && k->paid) {
        cpucredit_refund(&k->credit, k->paid, s->opts.interval_ns);
        k->paid = 0;
    }
}

void sampler_unpaid(struct sampler *s, const struct unwind_thread *t)
{
    if (!s->on_cpu_set)
        return;
    if (t) {
        if (t->native_thread_id) /* (0: its state could not be read, nor was it asked) */
            sampler_refund(s, sampler_thread_get(s, t->native_thread_id, false));
        return;
    }
    for (size_t i = 0; i < SAMPLER_THREADS; i++)
        sampler_refund(s, &s->threads[i]);
}

void sampler_fan(struct sampler *s, const struct sink_sample *x)
{
    for (size_t q = 0; q < s->nsinks; q++) {
        const struct sample_sink *sk = &s->sinks[q];
        if (sk->add && sk->add(sk->arg, x) == 0 && q == 0)
            s->counts.thread_samples++;
    }
}

void sampler_again(struct sampler *s, bool asleep)
{
    if (!asleep) {
        const struct unwind_result *r = s->last;
        for (size_t i = 0; i < r->nthreads; i++) {
            const struct unwind_thread *t = &r->threads[i];
            sampler_give(s, t, t->frames, t->nframes, NULL, NULL, true, true);
            s->counts.reused++;
        }
    }
    s->counts.saved++;
    s->counts.taken++;
}

/* ---- what sources use -------------------------------------------------------- */

const struct sampler_opts *sampler_opts_of(const struct sampler *s)
{
    return &s->opts;
}

pid_t sampler_pid(const struct sampler *s)
{
    return s->pid;
}

struct unwinder *sampler_unwinder(const struct sampler *s)
{
    return s->u;
}

pid_t sampler_host_tid(struct sampler *s, uint64_t ns_tid)
{
    return sampler_thread_get(s, ns_tid, true)->host_tid;
}

struct sampler_counts *sampler_tally(struct sampler *s)
{
    return &s->counts;
}

unsigned sampler_unwind_flags(const struct sampler *s, unsigned extra)
{
    unsigned f =
        s->opts.unwind_flags & (UNWIND_ALL_THREADS | UNWIND_NATIVE | UNWIND_NO_GC | UNWIND_OPCODES);
    f |= extra;
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

const struct unwind_result *sampler_last(const struct sampler *s)
{
    return s->last;
}

void sampler_set_last(struct sampler *s, const struct unwind_result *r)
{
    s->last = r;
}

uint64_t sampler_grid(const struct sampler *s)
{
    return schedule_due(&s->sched);
}

uint64_t sampler_jitter(const struct sampler *s)
{
    return s->jitter;
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
    if (s->no_jitter) /* draining needs no jitter */
        return;
    s->jitter = schedule_jitter(schedule_due(&s->sched), s->opts.interval_ns, now_ns, &s->rng);
}

/* The bookkeeping of an attempt made at @now_ns (or passed at its due time). */
static void sampler_begin(struct sampler *s, uint64_t now_ns)
{
    s->now_ns = now_ns;
    schedule_attempted(&s->sched, now_ns);
    sampler_next_jitter(s, now_ns);
    s->last_attempt_ns = now_ns;
    s->counts.attempts++;
}

void sampler_pass(struct sampler *s, uint64_t at)
{
    sampler_begin(s, at);
}

void sampler_drain_schedule(struct sampler *s, uint64_t now_ns, uint64_t period_ns)
{
    schedule_init(&s->sched, now_ns, period_ns);
    s->no_jitter = true;
    s->jitter = 0;
}

/* ---- public ---------------------------------------------------------------------- */

/* The first source of @s's chain whose operation at offset @op of its ops is set, or NULL. */
static struct sample_source *sampler_with(const struct sampler *s, size_t op)
{
    for (struct sample_source *src = s->src; src; src = src->next) {
        void (*fn)(void);
        memcpy(&fn, (const char *)src->ops + op, sizeof(fn));
        if (fn)
            return src;
    }
    return NULL;
}

/* The first source of the chain with operation @op (a member of the ops), or NULL. */
#define SAMPLER_WITH(s, op) sampler_with((s), offsetof(struct sample_source_ops, op))

/*
 * The source chain the options ask for: the kernel's samples (native: full
 * without blocking; refused: markers on the schedule), the exact path
 * (blocking), or the read, with the idle filter in front of it where idle
 * threads can be answered for (not where the kernel drives or threads are
 * stopped, nor where nothing could be counted again: async wall mode).
 */
static int sampler_choose(struct sampler *s, uint64_t now_ns)
{
    const struct sampler_opts *o = &s->opts;
    char why[256];
    if (o->native_full && !o->blocking) {
        if (sampler_kernel_new(s, now_ns, &s->src, why, sizeof(why)) == 0) {
            snprintf(s->native_state, sizeof(s->native_state), "full");
            return 0;
        }
        s->opts.unwind_flags |= UNWIND_NATIVE;
        snprintf(s->native_state, sizeof(s->native_state), "markers: %s", why);
    }
    if (o->blocking) {
        bool c_on = false;
        int err = sampler_exact_new(s, o->native_full, &s->src, &c_on, why, sizeof(why));
        if (err)
            return err;
        if (o->native_full && c_on) {
            snprintf(s->native_state, sizeof(s->native_state), "full");
        } else if (o->native_full) {
            s->opts.unwind_flags |= UNWIND_NATIVE;
            snprintf(s->native_state, sizeof(s->native_state), "markers: %s", why);
        }
        return 0;
    }
    int err = sampler_read_new(s, &s->src);
    if (!err && o->idle_check != IDLE_CHECK_OFF && !(o->async && o->mode != PROFILE_CPU))
        err = sampler_idle_new(s, s->src, now_ns, &s->src);
    return err;
}

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
    int err = sampler_choose(s, now_ns);
    if (err) {
        sampler_free(s);
        return err;
    }
    /* the TIDs thread states name, checked against the target's threads */
    if (u)
        unwinder_set_tasks(u, sampler_tasks, s);
    /* cpu mode's test, where the threads' stacks are read on the schedule */
    if (opts->mode == PROFILE_CPU && !SAMPLER_WITH(s, drain)) {
        unwinder_set_on_cpu(u, sampler_on_cpu, s);
        s->on_cpu_set = true;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%d/schedstat", s->opts.proc_root, (int)pid);
        s->no_schedstat = access(path, R_OK) != 0 && errno == ENOENT;
    }
    *out = s;
    return 0;
}

void sampler_free(struct sampler *s)
{
    if (!s)
        return;
    if (s->on_cpu_set)
        unwinder_set_on_cpu(s->u, NULL, NULL);
    if (s->u)
        unwinder_set_tasks(s->u, NULL, NULL);
    if (s->src)
        s->src->ops->free(s->src); /* a filter frees the source behind it */
    for (size_t i = 0; i < SAMPLER_THREADS; i++)
        sampler_thread_close(&s->threads[i]);
    alloc_free(s->spans);
    alloc_free((char *)s->opts.proc_root);
    alloc_free(s);
}

uint64_t sampler_due(const struct sampler *s)
{
    return schedule_due(&s->sched) + s->jitter;
}

int sampler_attempt(struct sampler *s, uint64_t now_ns)
{
    struct sample_source *src = s->src;
    if (src->ops->before)
        src->ops->before(src, now_ns);
    sampler_begin(s, now_ns);
    return src->ops->attempt(src, now_ns);
}

void sampler_skip(struct sampler *s, uint64_t now_ns, uint64_t n)
{
    struct sample_source *src = SAMPLER_WITH(s, skip);
    if (src) {
        src->ops->skip(src, now_ns, n);
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

bool sampler_parkable(const struct sampler *s)
{
    const struct sample_source *src = SAMPLER_WITH(s, parkable);
    return src && src->ops->parkable(src);
}

int sampler_park(struct sampler *s, int epfd, uint64_t token)
{
    struct sample_source *src = SAMPLER_WITH(s, park);
    return src ? src->ops->park(src, epfd, token) : -ENOTSUP;
}

bool sampler_parked(const struct sampler *s)
{
    const struct sample_source *src = SAMPLER_WITH(s, parked);
    return src && src->ops->parked(src);
}

void sampler_catch_up(struct sampler *s, uint64_t now_ns)
{
    struct sample_source *src = SAMPLER_WITH(s, catch_up);
    if (src)
        src->ops->catch_up(src, now_ns);
}

void sampler_unpark(struct sampler *s, uint64_t now_ns, int epfd)
{
    struct sample_source *src = SAMPLER_WITH(s, unpark);
    if (src)
        src->ops->unpark(src, now_ns, epfd);
}

const char *sampler_idle_check(const struct sampler *s)
{
    const struct sample_source *src = SAMPLER_WITH(s, idle_check);
    return src ? src->ops->idle_check(src) : NULL;
}

enum idle_check sampler_idle_how(const struct sampler *s)
{
    const struct sample_source *src = SAMPLER_WITH(s, idle_how);
    return src ? src->ops->idle_how(src) : IDLE_CHECK_OFF;
}

const char *sampler_native_refused(const struct sampler *s)
{
    return strncmp(s->native_state, "markers: ", 9) == 0 ? s->native_state + 9 : NULL;
}

const char *sampler_native(const struct sampler *s)
{
    return s->native_state[0] ? s->native_state : NULL;
}

int sampler_native_fd(const struct sampler *s)
{
    const struct sample_source *src = SAMPLER_WITH(s, fd);
    return src ? src->ops->fd(src) : -1;
}

int sampler_native_drain(struct sampler *s, uint64_t now_ns)
{
    struct sample_source *src = SAMPLER_WITH(s, drain);
    return src ? src->ops->drain(src, now_ns) : 0;
}

void sampler_native_factor(struct sampler *s, double factor)
{
    struct sample_source *src = SAMPLER_WITH(s, factor);
    if (src)
        src->ops->factor(src, factor);
}

bool sampler_native_counts(const struct sampler *s, struct nsampler_counts *out)
{
    const struct sample_source *src = SAMPLER_WITH(s, native_counts);
    return src && src->ops->native_counts(src, out);
}

struct sampler_counts sampler_counts(const struct sampler *s)
{
    struct sampler_counts c;
    const struct sample_source *src = SAMPLER_WITH(s, counts);
    if (src && src->ops->counts(src, false, &c)) {
        c.thread_samples = s->counts.thread_samples;
        return c;
    }
    c = s->counts;
    c.missed = schedule_given_up(&s->sched);
    return c;
}

struct sampler_counts sampler_counts_final(const struct sampler *s)
{
    struct sampler_counts c;
    const struct sample_source *src = SAMPLER_WITH(s, counts);
    if (src && src->ops->counts(src, true, &c)) {
        c.thread_samples = s->counts.thread_samples;
        return c;
    }
    c = s->counts;
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

/* The per-thread spans a first trace-context source needs. */
static int sampler_spans(struct sampler *s)
{
    if (!s->spans) {
        s->spans = alloc_calloc(SAMPLER_THREADS, sizeof(*s->spans));
        if (!s->spans)
            return -ENOMEM;
    }
    return 0;
}

int sampler_set_trace_context(struct sampler *s, struct otel_thread *t)
{
    if (t && sampler_spans(s))
        return -ENOMEM;
    s->tctx = t;
    return 0;
}

int sampler_set_sdk_context(struct sampler *s, struct otel_sdk *k)
{
    if (k && sampler_spans(s))
        return -ENOMEM;
    uint32_t off = k ? otel_sdk_context_offset(k) : 0;
    int err = unwinder_set_thread_words(s->u, UNWIND_WORD_CONTEXT, k ? &off : NULL, 1);
    if (err)
        return err;
    s->sdk = k;
    return 0;
}

struct otel_sdk *sampler_sdk_context(const struct sampler *s)
{
    return s->sdk;
}

struct otel_thread *sampler_trace_context(const struct sampler *s)
{
    return s->tctx;
}
