/* SPDX-License-Identifier: MIT */
/*
 * sampler_kernel.c: the kernel's samples as a sampler's source (source.h,
 * "kernel"; native: full without blocking): the kernel samples each thread
 * every period of its CPU time (sampler/nsampler.h), and the caller drains
 * them when the source's descriptor is readable. The schedule's attempts
 * only drain what waits and look for new threads, every
 * SAMPLER_NATIVE_DRAIN_NS. The samples are CPU time by construction, and
 * the counts are the kernel's samples': attempts are samples taken.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "sampler/nsampler.h"
#include "sampler/source.h"

struct sampler_kernel {
    struct sample_source src;
    struct nsampler *ns;
    uint64_t period; /* the configured one: the sampler's interval */
};

/* Each joined stack goes to every sink in full (the kernel's samples carry
 * no "unchanged" to coalesce on). */
static int sampler_kernel_add(void *arg, const struct sink_sample *x)
{
    sampler_fan(arg, x);
    return 0;
}

static int sampler_kernel_attempt(struct sample_source *src, uint64_t now_ns)
{
    return nsampler_drain(((struct sampler_kernel *)src)->ns, now_ns);
}

/* The budget lowers the kernel's rate instead (sampler_kernel_factor). */
static void sampler_kernel_skip(struct sample_source *src, uint64_t now_ns, uint64_t n)
{
    (void)n;
    (void)sampler_attempt(src->s, now_ns);
}

static int sampler_kernel_drain(struct sample_source *src, uint64_t now_ns)
{
    return nsampler_drain(((struct sampler_kernel *)src)->ns, now_ns);
}

static int sampler_kernel_fd(const struct sample_source *src)
{
    return nsampler_fd(((const struct sampler_kernel *)src)->ns);
}

static void sampler_kernel_factor(struct sample_source *src, double factor)
{
    struct sampler_kernel *k = (struct sampler_kernel *)src;
    if (!(factor > 0))
        return;
    double p = (double)k->period / (factor < 1 ? factor : 1);
    uint64_t period = p >= 1e12 ? 1000000000000ull : (uint64_t)p;
    if (period != nsampler_period(k->ns))
        (void)nsampler_set_period(k->ns, period); /* a thread that refuses keeps its period */
}

static bool sampler_kernel_native_counts(const struct sample_source *src,
                                         struct nsampler_counts *out)
{
    *out = nsampler_counts(((const struct sampler_kernel *)src)->ns);
    return true;
}

/* The sampler's counts: attempts are the kernel's samples (thread samples are the sinks'). */
static bool sampler_kernel_counts(const struct sample_source *src, bool final,
                                  struct sampler_counts *out)
{
    (void) final;
    struct nsampler_counts n = nsampler_counts(((const struct sampler_kernel *)src)->ns);
    *out = (struct sampler_counts){
        .attempts = n.samples,
        .taken = n.merged + n.cut + n.python + n.native,
        .failed = n.disagree + n.late + n.failed,
        .missed = n.lost,
    };
    memcpy(out->failed_by, n.failed_by, sizeof(out->failed_by));
    return true;
}

static void sampler_kernel_free(struct sample_source *src)
{
    nsampler_free(((struct sampler_kernel *)src)->ns);
    alloc_free(src);
}

static const struct sample_source_ops sampler_kernel_ops = {
    .name = "kernel",
    .attempt = sampler_kernel_attempt,
    .skip = sampler_kernel_skip,
    .drain = sampler_kernel_drain,
    .fd = sampler_kernel_fd,
    .factor = sampler_kernel_factor,
    .native_counts = sampler_kernel_native_counts,
    .counts = sampler_kernel_counts,
    .free = sampler_kernel_free,
};

int sampler_kernel_new(struct sampler *s, uint64_t now_ns, struct sample_source **out, char *why,
                       size_t whylen)
{
    const struct sampler_opts *o = sampler_opts_of(s);
    struct sampler_kernel *k = alloc_calloc(1, sizeof(*k));
    if (!k) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    k->src = (struct sample_source){.ops = &sampler_kernel_ops, .s = s};
    k->period = o->interval_ns;
    struct sample_sink fan = {.add = sampler_kernel_add, .arg = s};
    struct nsampler_opts no = {
        .period_ns = o->interval_ns,
        .stack_bytes = o->native_stack,
        .unwind_flags = o->unwind_flags,
        .proc_root = o->proc_root,
        .main_only = !(o->unwind_flags & UNWIND_ALL_THREADS),
    };
    int err = nsampler_new(sampler_pid(s), sampler_unwinder(s), &fan, &no, &k->ns, why, whylen);
    if (err) {
        alloc_free(k);
        return err;
    }
    /* the schedule only drains and looks for new threads */
    sampler_drain_schedule(s, now_ns, SAMPLER_NATIVE_DRAIN_NS);
    *out = &k->src;
    return 0;
}
