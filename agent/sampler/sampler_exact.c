/* SPDX-License-Identifier: MIT */
/*
 * sampler_exact.c: the exact path (source.h, "exact"; `--blocking`): each
 * attempt seizes every thread of the target, interrupts it and waits for
 * the stop, reads (sampler_read.h), and detaches (as CPython's own sampler
 * does); between attempts the target is not traced at all, so signals reach
 * it as usual, and one that arrives during the stop is handed back with the
 * detach. With native: full, each stopped thread's registers
 * (PTRACE_GETREGS) and the top of its stack are read too, unwound after the
 * resume and joined with its Python stack: no time passes between the two
 * reads, so nothing is late.
 */
#include "base/compat.h"

#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "base/alloc.h"
#include "perf/perfsample.h"
#include "sampler/sampler_read.h"
#include "sampler/source.h"
#include "sampler/tasks.h"
#include "sampler/threadstat.h"
#include "unwind/mixed.h"
#include "unwind/native.h"

#define SAMPLER_EXACT_REFRESH 1000000000ull /* mappings read again at most once a second */

/* One stopped thread's user state, as a kernel sample would have it. */
struct sampler_exact_thread {
    uint64_t ns_tid; /* 0: nothing read */
    struct perfsample_record rec;
    uint8_t *stack; /* stack_bytes, made at the slot's first use */
};

/* The C frames of the stopped threads (native: full with blocking). */
struct sampler_exact_c {
    struct native *native;
    struct mixed *mixed;
    uint32_t stack_bytes;
    uint64_t refreshed_at, now_ns;
    struct sampler_exact_thread threads[TASKS_MAX];
    struct native_frame frames[NATIVE_MAX_FRAMES];
    struct nsampler_counts c;
};

struct sampler_exact {
    struct sample_source src;
    pid_t traced[TASKS_MAX]; /* seized TIDs */
    int pending[TASKS_MAX];  /* a signal each stopped thread was about to get */
    /* cpu mode: 'R' before the stop (running, or waiting for a CPU: the
     * thread's credit tells how much of it ran, sampler/cpucredit.h) */
    bool was_runnable[TASKS_MAX];
    size_t ntraced;
    struct sampler_exact_c *cx; /* NULL: Python frames only */
};

/* ---- stopping and resuming ------------------------------------------------------ */

static int sampler_exact_stop_all(struct sampler_exact *x)
{
    const struct sampler_opts *o = sampler_opts_of(x->src.s);
    pid_t pid = sampler_pid(x->src.s);
    pid_t tids[TASKS_MAX];
    size_t n;
    x->ntraced = 0;
    int err = tasks_list(o->proc_root, pid, tids, TASKS_MAX, &n, NULL);
    if (err)
        return -ESRCH;
    for (size_t k = 0; k < n; k++) {
        pid_t tid = tids[k];
        /* cpu mode: whether it runs, asked before the stop makes it 't' */
        char state = 0;
        if (o->mode == PROFILE_CPU && threadstat_state(o->proc_root, pid, tid, &state))
            state = 0;
        if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) == 0) {
            x->pending[x->ntraced] = 0;
            x->was_runnable[x->ntraced] = state == 'R';
            x->traced[x->ntraced++] = tid;
            (void)ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
        } else if (errno == EPERM) {
            err = -EPERM;
        }
    }
    for (size_t i = 0; i < x->ntraced; i++) {
        int status;
        if (waitpid(x->traced[i], &status, __WALL) < 0 || WIFEXITED(status) ||
            WIFSIGNALED(status)) {
            /* gone: the last one takes its place (not waited for yet) */
            x->ntraced--;
            x->traced[i] = x->traced[x->ntraced];
            x->was_runnable[i] = x->was_runnable[x->ntraced];
            i--;
            continue;
        }
        /* a signal on its way to the thread, not our interrupt: keep it */
        if (WIFSTOPPED(status) && (status >> 16) != PTRACE_EVENT_STOP)
            x->pending[i] = WSTOPSIG(status);
    }
    return err;
}

static void sampler_exact_resume_all(struct sampler_exact *x)
{
    for (size_t i = 0; i < x->ntraced; i++)
        (void)ptrace(PTRACE_DETACH, x->traced[i], NULL, (void *)(intptr_t)x->pending[i]);
    x->ntraced = 0;
}

/* ---- the C frames of the stopped threads ------------------------------------------ */

static void sampler_exact_c_free(struct sampler_exact_c *cx)
{
    if (!cx)
        return;
    native_free(cx->native);
    mixed_free(cx->mixed);
    for (size_t i = 0; i < TASKS_MAX; i++)
        alloc_free(cx->threads[i].stack);
    alloc_free(cx);
}

/* Sets up reading the stopped threads' C stacks; on failure says why in @why. */
static int sampler_exact_c_new(struct sampler *s, struct sampler_exact_c **out, char *why,
                               size_t whylen)
{
#if defined(__x86_64__)
    const struct sampler_opts *o = sampler_opts_of(s);
    struct sampler_exact_c *cx = alloc_calloc(1, sizeof(*cx));
    if (!cx || mixed_new(&cx->mixed)) {
        sampler_exact_c_free(cx);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    cx->stack_bytes = o->native_stack ? o->native_stack : NSAMPLER_STACK_DEFAULT;
    int err = native_new(o->proc_root, sampler_pid(s), &cx->native, why, whylen);
    if (err) {
        sampler_exact_c_free(cx);
        return err;
    }
    *out = cx;
    return 0;
#else
    (void)s;
    (void)out;
    snprintf(why, whylen, "the exact path reads x86-64 registers only");
    return -ENOTSUP;
#endif
}

/*
 * While the threads are stopped: thread @i of the read (@t) registers
 * (PTRACE_GETREGS: it is our tracee) and the top of its stack, into slot @i.
 */
static void sampler_exact_capture(struct sampler_exact *x, size_t i, const struct unwind_thread *t)
{
    struct sampler_exact_thread *e = &x->cx->threads[i];
    e->ns_tid = 0;
    /* a slot's copy is made the first time a thread is in it: as many as the
     * target has had threads at once, not TASKS_MAX */
    if (!e->stack && !(e->stack = alloc_malloc(x->cx->stack_bytes)))
        return; /* its Python frames only */
#if defined(__x86_64__)
    pid_t host = sampler_host_tid(x->src.s, t->native_thread_id);
    struct user_regs_struct ur;
    if (!host || ptrace(PTRACE_GETREGS, host, NULL, &ur))
        return; /* not stopped by us (or gone): its Python frames only */
    uint64_t *g = e->rec.regs;
    g[PERFSAMPLE_AX] = ur.rax;
    g[PERFSAMPLE_BX] = ur.rbx;
    g[PERFSAMPLE_CX] = ur.rcx;
    g[PERFSAMPLE_DX] = ur.rdx;
    g[PERFSAMPLE_SI] = ur.rsi;
    g[PERFSAMPLE_DI] = ur.rdi;
    g[PERFSAMPLE_BP] = ur.rbp;
    g[PERFSAMPLE_SP] = ur.rsp;
    g[PERFSAMPLE_IP] = ur.rip;
    g[PERFSAMPLE_R8] = ur.r8;
    g[PERFSAMPLE_R9] = ur.r9;
    g[PERFSAMPLE_R10] = ur.r10;
    g[PERFSAMPLE_R11] = ur.r11;
    g[PERFSAMPLE_R12] = ur.r12;
    g[PERFSAMPLE_R13] = ur.r13;
    g[PERFSAMPLE_R14] = ur.r14;
    g[PERFSAMPLE_R15] = ur.r15;
    /* as much of the stack as is mapped from its pointer up (a short read
     * at the mapping's end) */
    pid_t pid = sampler_pid(x->src.s);
    struct iovec local = {.iov_base = e->stack, .iov_len = x->cx->stack_bytes};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)ur.rsp, .iov_len = x->cx->stack_bytes};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    e->rec.pid = (uint32_t)pid;
    e->rec.tid = (uint32_t)host;
    e->rec.regs_valid = true;
    e->rec.stack = e->stack;
    e->rec.stack_len = got > 0 ? (size_t)got & ~(size_t)7 : 0;
    e->ns_tid = t->native_thread_id;
#else
    (void)t;
#endif
}

/*
 * After the resume (sampler_read_join_fn): thread @i's C frames unwound and
 * joined with its Python frames @t. Returns the stack to give the sinks
 * (*@out, *@n), or false when none is kept (the two disagree: counted).
 */
static bool sampler_exact_join(void *arg, size_t i, const struct unwind_thread *t,
                               const struct unwind_frame **out, size_t *n)
{
    struct sampler_exact_c *cx = arg;
    struct sampler_exact_thread *e = i < TASKS_MAX ? &cx->threads[i] : NULL;
    cx->c.samples++;
    int nc = 0;
    if (e && e->ns_tid == t->native_thread_id) {
        nc = native_unwind(cx->native, &e->rec, cx->frames, NATIVE_MAX_FRAMES);
        if (nc == -ENOENT && cx->now_ns >= cx->refreshed_at + SAMPLER_EXACT_REFRESH) {
            cx->refreshed_at = cx->now_ns; /* a library loaded since */
            if (native_refresh(cx->native) == 0)
                nc = native_unwind(cx->native, &e->rec, cx->frames, NATIVE_MAX_FRAMES);
        }
    }
    if (nc <= 0 && t->nframes == 0) {
        cx->c.failed++;
        cx->c.failed_by[SAMPLE_READ_FAULT]++;
        return false;
    }
    enum mixed_result res =
        nc > 0 ? mixed_merge(cx->mixed, cx->frames, (size_t)nc, native_complete(cx->native),
                             t->frames, t->nframes, out, n)
               : MIXED_NO_ENTRY;
    switch (res) {
    case MIXED_OK:
        if (t->nframes)
            cx->c.merged++;
        else
            cx->c.native++;
        return true;
    case MIXED_CUT:
        cx->c.cut++;
        return true;
    case MIXED_DISAGREE:
        cx->c.disagree++;
        cx->c.failed_by[SAMPLE_NATIVE_DISAGREE]++;
        return false;
    case MIXED_NO_ENTRY:
    default:
        cx->c.python++;
        *n = mixed_python_only(cx->mixed, t->frames, t->nframes, out);
        return true;
    }
}

/* ---- the source ------------------------------------------------------------------------ */

static int sampler_exact_attempt(struct sample_source *src, uint64_t now_ns)
{
    struct sampler_exact *x = (struct sampler_exact *)src;
    struct sampler_read_result rd;
    (void)sampler_exact_stop_all(x); /* a thread that cannot be stopped is sampled running */
    /* with C frames, the entry frames: where the C frames join */
    sampler_read_collect(src->s, x->cx ? UNWIND_ENTRIES : 0, &rd);
    /* each thread's registers and stack while it is stopped */
    for (size_t i = 0; x->cx && !rd.err && !rd.gone && i < rd.r->nthreads && i < TASKS_MAX; i++) {
        if (rd.r->threads[i].status == SAMPLE_OK)
            sampler_exact_capture(x, i, &rd.r->threads[i]);
        else
            x->cx->threads[i].ns_tid = 0;
    }
    /* The threads are resumed before the (local) aggregation work. */
    sampler_exact_resume_all(x);
    if (x->cx)
        x->cx->now_ns = now_ns;
    return sampler_read_give(src->s, &rd, x->cx ? sampler_exact_join : NULL, x->cx);
}

/*
 * Stopped by us: a thread's state before the stop. 'R' is running or
 * waiting for a CPU, which the stop cannot tell apart (both stop the same
 * way), so the thread's credit decides how much of it was CPU time.
 */
static int sampler_exact_on_cpu(const struct sample_source *src, pid_t tid, uint64_t *cpu_ns)
{
    (void)cpu_ns; /* its schedstat is read during the stop, which adds nothing to it */
    const struct sampler_exact *x = (const struct sampler_exact *)src;
    if (!x->ntraced)
        return CPUCREDIT_ASK;
    for (size_t i = 0; i < x->ntraced; i++) {
        if (x->traced[i] == tid)
            return x->was_runnable[i] ? CPUCREDIT_RUNNABLE : CPUCREDIT_OFF;
    }
    return CPUCREDIT_OFF;
}

static bool sampler_exact_native_counts(const struct sample_source *src,
                                        struct nsampler_counts *out)
{
    const struct sampler_exact *x = (const struct sampler_exact *)src;
    if (!x->cx)
        return false;
    *out = x->cx->c;
    out->files = native_files(x->cx->native);
    return true;
}

static void sampler_exact_free(struct sample_source *src)
{
    struct sampler_exact *x = (struct sampler_exact *)src;
    sampler_exact_resume_all(x); /* never leave the target stopped */
    sampler_exact_c_free(x->cx);
    alloc_free(x);
}

static const struct sample_source_ops sampler_exact_ops = {
    .name = "exact",
    .attempt = sampler_exact_attempt,
    .on_cpu = sampler_exact_on_cpu,
    .native_counts = sampler_exact_native_counts,
    .free = sampler_exact_free,
};

int sampler_exact_new(struct sampler *s, bool c_frames, struct sample_source **out,
                      bool *c_frames_on, char *why, size_t whylen)
{
    struct sampler_exact *x = alloc_calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->src = (struct sample_source){.ops = &sampler_exact_ops, .s = s};
    /* find out now whether the threads can be stopped at all */
    int err = sampler_exact_stop_all(x);
    bool stopped = x->ntraced > 0;
    sampler_exact_resume_all(x);
    if (err || !stopped) {
        alloc_free(x);
        return err ? err : -EPERM;
    }
    *c_frames_on = c_frames && sampler_exact_c_new(s, &x->cx, why, whylen) == 0;
    *out = &x->src;
    return 0;
}
