/* SPDX-License-Identifier: MIT */
/*
 * sampler_exact.c: native: full with blocking, the exact path (see
 * sampler.h): in each stop, each thread's registers (PTRACE_GETREGS) and the
 * top of its stack, unwound after the resume and joined with its Python
 * stack.
 */
#include "base/compat.h"

#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "base/alloc.h"
#include "perf/perfsample.h"
#include "sampler/nsampler.h"
#include "sampler/sampler_internal.h"
#include "unwind/mixed.h"
#include "unwind/native.h"

/* ---- native: full with blocking: the exact path -------------------------- */

/* One stopped thread's user state, as a kernel sample would have it. */
struct sampler_exact_thread {
    uint64_t ns_tid; /* 0: nothing read */
    struct perfsample_record rec;
    uint8_t *stack; /* stack_bytes */
};

struct sampler_exact {
    struct native *native;
    struct mixed *mixed;
    uint32_t stack_bytes;
    uint64_t refreshed_at;
    struct sampler_exact_thread threads[SAMPLER_EXACT_THREADS];
    struct native_frame frames[NATIVE_MAX_FRAMES];
    struct nsampler_counts c;
};

void sampler_exact_free(struct sampler_exact *x)
{
    if (!x)
        return;
    native_free(x->native);
    mixed_free(x->mixed);
    for (size_t i = 0; i < SAMPLER_EXACT_THREADS; i++)
        alloc_free(x->threads[i].stack);
    alloc_free(x);
}

/* Sets up the exact path; on failure says why in @why (the caller falls back). */
int sampler_exact_new(struct sampler *s, char *why, size_t whylen)
{
#if defined(__x86_64__)
    struct sampler_exact *x = alloc_calloc(1, sizeof(*x));
    if (!x || mixed_new(&x->mixed)) {
        sampler_exact_free(x);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    x->stack_bytes = s->opts.native_stack ? s->opts.native_stack : NSAMPLER_STACK_DEFAULT;
    for (size_t i = 0; i < SAMPLER_EXACT_THREADS; i++) {
        if (!(x->threads[i].stack = alloc_malloc(x->stack_bytes))) {
            sampler_exact_free(x);
            snprintf(why, whylen, "out of memory");
            return -ENOMEM;
        }
    }
    int err = native_new(s->opts.proc_root, s->pid, &x->native, why, whylen);
    if (err) {
        sampler_exact_free(x);
        return err;
    }
    s->exact = x;
    return 0;
#else
    snprintf(why, whylen, "the exact path reads x86-64 registers only");
    return -ENOTSUP;
#endif
}

/*
 * While the threads are stopped: thread @i of the read @r's registers
 * (PTRACE_GETREGS: it is our tracee) and the top of its stack, into slot @i.
 */
void sampler_exact_capture(struct sampler *s, size_t i, const struct unwind_thread *t)
{
    struct sampler_exact_thread *e = &s->exact->threads[i];
    e->ns_tid = 0;
#if defined(__x86_64__)
    struct sampler_thread *k = sampler_thread(s, t->native_thread_id);
    struct user_regs_struct ur;
    if (!k->host_tid || ptrace(PTRACE_GETREGS, k->host_tid, NULL, &ur))
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
    struct iovec local = {.iov_base = e->stack, .iov_len = s->exact->stack_bytes};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)ur.rsp, .iov_len = s->exact->stack_bytes};
    ssize_t got = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
    e->rec.pid = (uint32_t)s->pid;
    e->rec.tid = (uint32_t)k->host_tid;
    e->rec.regs_valid = true;
    e->rec.stack = e->stack;
    e->rec.stack_len = got > 0 ? (size_t)got & ~(size_t)7 : 0;
    e->ns_tid = t->native_thread_id;
#else
    (void)s;
    (void)t;
#endif
}

/*
 * After the resume: thread @i's C frames unwound and joined with its Python
 * frames @t. Returns the stack to give the sinks (*@out, *@n), or false when
 * none is kept (the two disagree: counted).
 */
bool sampler_exact_join(struct sampler *s, size_t i, const struct unwind_thread *t,
                        const struct unwind_frame **out, size_t *n)
{
    struct sampler_exact *x = s->exact;
    struct sampler_exact_thread *e = i < SAMPLER_EXACT_THREADS ? &x->threads[i] : NULL;
    x->c.samples++;
    int nc = 0;
    if (e && e->ns_tid == t->native_thread_id) {
        nc = native_unwind(x->native, &e->rec, x->frames, NATIVE_MAX_FRAMES);
        if (nc == -ENOENT && s->now_ns >= x->refreshed_at + SAMPLER_REFRESH_NS) {
            x->refreshed_at = s->now_ns; /* a library loaded since */
            if (native_refresh(x->native) == 0)
                nc = native_unwind(x->native, &e->rec, x->frames, NATIVE_MAX_FRAMES);
        }
    }
    if (nc <= 0 && t->nframes == 0) {
        x->c.failed++;
        x->c.failed_by[SAMPLE_READ_FAULT]++;
        return false;
    }
    enum mixed_result res =
        nc > 0 ? mixed_merge(x->mixed, x->frames, (size_t)nc, native_complete(x->native), t->frames,
                             t->nframes, out, n)
               : MIXED_NO_ENTRY;
    switch (res) {
    case MIXED_OK:
        if (t->nframes)
            x->c.merged++;
        else
            x->c.native++;
        return true;
    case MIXED_CUT:
        x->c.cut++;
        return true;
    case MIXED_DISAGREE:
        x->c.disagree++;
        x->c.failed_by[SAMPLE_NATIVE_DISAGREE]++;
        return false;
    case MIXED_NO_ENTRY:
    default:
        x->c.python++;
        *n = mixed_python_only(x->mixed, t->frames, t->nframes, out);
        return true;
    }
}

void sampler_exact_forget(struct sampler *s, size_t i)
{
    s->exact->threads[i].ns_tid = 0;
}

struct nsampler_counts sampler_exact_counts(const struct sampler *s)
{
    struct nsampler_counts c = s->exact->c;
    if (s->exact->native)
        c.files = native_files(s->exact->native);
    return c;
}
