/* SPDX-License-Identifier: MIT */
/*
 * probe_fake.c: a probe over synthetic CPython images (see probe_fake.h).
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "memread_fake.h"
#include "probe_fake.h"

struct probe_fake_proc {
    pid_t pid; /* 0: free slot */
    struct pyimage *img;
    bool exited;
    struct pyruntime rt; /* where the installed image has its runtime */
    unsigned locates;
};

struct probe_fake {
    struct probe_ops ops;
    struct clock_fake *clock;
    uint64_t read_cost;
    struct probe_fake_proc procs[PROBE_FAKE_MAX_PROCS];
};

/* One reader handed out: the image's reader, tied to its process. */
struct probe_fake_reader {
    struct probe_fake *pf;
    struct probe_fake_proc *proc;
    struct memread *inner;
};

static struct probe_fake_proc *probe_fake_find(struct probe_fake *pf, pid_t pid)
{
    for (size_t i = 0; i < PROBE_FAKE_MAX_PROCS; i++) {
        if (pf->procs[i].pid == pid)
            return &pf->procs[i];
    }
    return NULL;
}

static int probe_fake_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct probe_fake_reader *r = priv;
    if (r->pf->clock)
        clock_fake_spend(r->pf->clock, r->pf->read_cost);
    if (r->proc->exited)
        return -ESRCH;
    return memread_readv(r->inner, iov, n);
}

static void probe_fake_close(void *priv)
{
    struct probe_fake_reader *r = priv;
    if (!r)
        return;
    memread_free(r->inner);
    alloc_free(r);
}

static const struct memread_ops probe_fake_reader_ops = {
    .name = "probe_fake",
    .readv = probe_fake_readv,
    .close = probe_fake_close,
};

static int probe_fake_open(void *arg, pid_t pid, struct memread **out)
{
    struct probe_fake *pf = arg;
    struct probe_fake_proc *p = probe_fake_find(pf, pid);
    if (!p || p->exited)
        return -ESRCH;
    struct probe_fake_reader *r = alloc_calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->pf = pf;
    r->proc = p;
    struct memread_fake *fake;
    int err = memread_fake_open(&fake, &r->inner);
    if (err) {
        alloc_free(r);
        return err;
    }
    if (p->img)
        pyimage_install(p->img, fake, &p->rt);
    return memread_new_custom(&probe_fake_reader_ops, r, out);
}

static int probe_fake_locate(void *arg, const char *proc_root, pid_t pid, struct memread *mr,
                             struct pyruntime *out, char *why, size_t why_len)
{
    struct probe_fake *pf = arg;
    (void)proc_root;
    (void)mr;
    struct probe_fake_proc *p = probe_fake_find(pf, pid);
    if (!p || p->exited) {
        snprintf(why, why_len, "no such process");
        return -ESRCH;
    }
    p->locates++;
    if (!p->img) {
        out->miss = PYRUNTIME_MISS_NO_CANDIDATE;
        snprintf(why, why_len, "no python library or executable is mapped");
        return -ENOENT;
    }
    *out = p->rt;
    return 0;
}

struct probe_fake *probe_fake_new(struct clock_fake *clock)
{
    struct probe_fake *pf = alloc_calloc(1, sizeof(*pf));
    assert_non_null(pf);
    pf->clock = clock;
    pf->ops = (struct probe_ops){
        .open = probe_fake_open,
        .locate = probe_fake_locate,
        .arg = pf,
    };
    return pf;
}

void probe_fake_free(struct probe_fake *pf)
{
    alloc_free(pf);
}

const struct probe_ops *probe_fake_ops(struct probe_fake *pf)
{
    return &pf->ops;
}

void probe_fake_set(struct probe_fake *pf, pid_t pid, struct pyimage *img)
{
    struct probe_fake_proc *p = probe_fake_find(pf, pid);
    if (!p)
        p = probe_fake_find(pf, 0);
    assert_non_null(p);
    p->pid = pid;
    p->img = img;
    p->exited = false;
}

void probe_fake_exit(struct probe_fake *pf, pid_t pid)
{
    struct probe_fake_proc *p = probe_fake_find(pf, pid);
    assert_non_null(p);
    p->exited = true;
}

void probe_fake_read_cost(struct probe_fake *pf, uint64_t ns)
{
    pf->read_cost = ns;
}

unsigned probe_fake_locates(const struct probe_fake *pf, pid_t pid)
{
    for (size_t i = 0; i < PROBE_FAKE_MAX_PROCS; i++) {
        if (pf->procs[i].pid == pid)
            return pf->procs[i].locates;
    }
    return 0;
}
