/* SPDX-License-Identifier: MIT */
/*
 * otel_thread.c: the OpenTelemetry thread context of sampled threads (see
 * otel_thread.h).
 */
#include "base/compat.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/alloc.h"
#include "discovery/elf_sections.h"
#include "discovery/proc_maps.h"
#include "discovery/pyruntime.h"
#include "unwind/otel_thread.h"
#include "unwind/unwind.h"

/* A static TLS offset is below the thread pointer and within this (glibc's
 * static TLS is a few KiB to a few MiB). */
#define OTEL_TLS_STATIC_SPAN (1ll << 30)
/* Module ids are small (one per loaded module with TLS). */
#define OTEL_TLS_MAX_MODULE 65536u
/* Per-thread places kept (direct-mapped by thread pointer). */
#define OTEL_THREAD_SLOTS 1024u

static const char *const otel_thread_model_names[] = {
    "none", "tlsdesc-static", "tlsdesc-dynamic", "general-dynamic", "initial-exec", "local-exec",
};

const char *otel_thread_model_name(enum otel_thread_model m)
{
    return (unsigned)m < PYPROFD_ARRAY_SIZE(otel_thread_model_names) ? otel_thread_model_names[m]
                                                                     : "?";
}

/* ---- finding the variable ------------------------------------------------------ */

static bool otel_memo_has(const struct otel_thread_memo *memo, uint64_t inode)
{
    for (size_t i = 0; i < memo->nchecked; i++) {
        if (memo->checked[i] == inode)
            return true;
    }
    return false;
}

static void otel_memo_add(struct otel_thread_memo *memo, uint64_t inode)
{
    if (memo->nchecked < OTEL_THREAD_CHECKED)
        memo->checked[memo->nchecked++] = inode;
}

/* The static offset glibc gives the first module (the executable) on x86-64,
 * where TLS blocks lie below the thread pointer (TLS variant II). */
static int64_t otel_le_offset(const struct elf_tls_segment *seg)
{
    uint64_t align = seg->align;
    uint64_t firstbyte = (0 - (seg->vaddr & (align - 1))) & (align - 1);
    uint64_t size = seg->memsz - firstbyte;
    uint64_t off = ((size + align - 1) & ~(align - 1)) + firstbyte;
    return -(int64_t)off;
}

/* From the GOT words the dynamic linker filled for file @ref (loaded with
 * @bias) to a locator. Returns 0, -EPROTO (with @why) or a memread error. */
static int otel_place(struct memread *mr, const struct elf_tls_ref *ref,
                      const struct elf_tls_segment *seg, uint64_t bias, bool first_file,
                      struct otel_thread_locator *out, char *why, size_t why_len)
{
    int err;
    if (ref->desc) {
        uint64_t d[2]; /* the resolver's address, its argument */
        if ((err = memread_read(mr, bias + ref->desc, d, sizeof(d))))
            return err;
        int64_t arg = (int64_t)d[1];
        if (arg < 0 && arg > -OTEL_TLS_STATIC_SPAN) {
            out->model = OTEL_TLS_DESC_STATIC;
            out->tp_offset = arg;
            return 0;
        }
        /* dynamic: the argument points to (module id, offset, generation) */
        uint64_t ti[2];
        if (d[1] == 0 || memread_read(mr, d[1], ti, sizeof(ti)) != 0) {
            snprintf(why, why_len, "its TLS descriptor's argument (0x%" PRIx64 ") cannot be read",
                     d[1]);
            return -EPROTO;
        }
        out->model = OTEL_TLS_DESC_DYNAMIC;
        out->module = ti[0];
        out->offset = ti[1];
    } else if (ref->gd_module && ref->gd_offset) {
        uint64_t mod, off;
        if ((err = memread_read(mr, bias + ref->gd_module, &mod, sizeof(mod))) ||
            (err = memread_read(mr, bias + ref->gd_offset, &off, sizeof(off))))
            return err;
        out->model = OTEL_TLS_GD;
        out->module = mod;
        out->offset = off;
    } else if (ref->ie) {
        uint64_t off;
        if ((err = memread_read(mr, bias + ref->ie, &off, sizeof(off))))
            return err;
        out->model = OTEL_TLS_IE;
        out->tp_offset = (int64_t)off;
        if (out->tp_offset >= 0 || out->tp_offset <= -OTEL_TLS_STATIC_SPAN) {
            snprintf(why, why_len, "its initial-exec GOT word (0x%" PRIx64 ") is no TLS offset",
                     off);
            return -EPROTO;
        }
        return 0;
    } else if (first_file) {
        out->model = OTEL_TLS_LE;
        out->tp_offset = otel_le_offset(seg) + (int64_t)ref->value;
        return 0;
    } else {
        snprintf(why, why_len,
                 "it defines " OTEL_THREAD_SYMBOL " but has no relocation that places it");
        return -ENOTSUP;
    }
    /* the dynamic models: a module id the dtv can have, an offset inside the block */
    if (out->module == 0 || out->module > OTEL_TLS_MAX_MODULE || out->offset >= seg->memsz) {
        snprintf(why, why_len,
                 "its TLS module id %" PRIu64 " / offset %" PRIu64
                 " are not a place (descriptor not resolved?)",
                 out->module, out->offset);
        return -EPROTO;
    }
    return 0;
}

int otel_thread_find(const char *proc_root, pid_t pid, struct memread *mr,
                     struct otel_thread_memo *memo, struct otel_thread_locator *out, char *why,
                     size_t why_len)
{
    *out = (struct otel_thread_locator){0};
    memo->searches++;
#if !defined(__x86_64__)
    (void)proc_root, (void)pid, (void)mr;
    snprintf(why, why_len, "the thread context is read on x86-64 only");
    return -ENOTSUP;
#else
    struct proc_maps *maps = NULL;
    int err = proc_maps_read(proc_root, pid, &maps);
    if (err) {
        snprintf(why, why_len, "cannot read '%s/%d/maps': %s", proc_root, (int)pid, strerror(-err));
        return err == -EACCES ? -EPERM : err;
    }
    err = -ENOENT;
    snprintf(why, why_len, "no library the process maps defines " OTEL_THREAD_SYMBOL);
    for (size_t i = 0; i < proc_maps_count(maps); i++) {
        /* musl lays out its threads' TLS otherwise: not read, rather than read wrong */
        const char *path = proc_maps_get(maps, i)->path;
        const char *base = strrchr(path, '/');
        if (strncmp(base ? base + 1 : path, "ld-musl-", 8) == 0) {
            snprintf(why, why_len, "the process runs on musl: only glibc's TLS layout is read");
            proc_maps_free(maps);
            return -ENOTSUP;
        }
    }
    /* the executable (local exec reaches only its own variable): the file
     * /proc/PID/exe names, else the first file mapped */
    char exe_path[PATH_MAX];
    struct stat exe;
    snprintf(exe_path, sizeof(exe_path), "%s/%d/exe", proc_root, (int)pid);
    bool exe_known = stat(exe_path, &exe) == 0;
    bool first = true;
    for (size_t i = 0; i < proc_maps_count(maps) && err == -ENOENT; i++) {
        const struct proc_map_entry *e = proc_maps_get(maps, i);
        if (!proc_map_is_file(e) || e->inode == 0 || e->offset != 0)
            continue;
        bool first_file = exe_known ? e->inode == exe.st_ino && e->dev_major == major(exe.st_dev) &&
                                          e->dev_minor == minor(exe.st_dev)
                                    : first;
        first = false;
        if (otel_memo_has(memo, e->inode))
            continue;
        const char *via = NULL;
        int fd = pyruntime_open_mapped(proc_root, pid, e, &via);
        if (fd < 0)
            continue; /* not kept: it may be openable later */
        struct elf_file *ef = NULL;
        struct elf_tls_segment seg;
        struct elf_tls_ref ref = {0};
        uint64_t base = 0;
        int rc = elf_file_open_fd(fd, &ef);
        if (rc == 0 && elf_file_tls(ef, &seg) && elf_file_load_base(ef, &base) == 0)
            rc = elf_file_find_tls_fd(ef, fd, OTEL_THREAD_SYMBOL, &ref);
        close(fd);
        elf_file_free(ef);
        if (rc == -ENOMEM) {
            err = -ENOMEM;
            break;
        }
        if (rc || !ref.found) {
            otel_memo_add(memo, e->inode);
            continue;
        }
        char reason[200] = "";
        err = otel_place(mr, &ref, &seg, e->start - base, first_file, out, reason, sizeof(reason));
        snprintf(out->file, sizeof(out->file), "%s", e->path);
        if (err == -ESRCH)
            snprintf(why, why_len, "the process is gone");
        else if (err == -EPROTO || err == -ENOTSUP)
            snprintf(why, why_len, "'%s': %s", e->path, reason);
        else if (err)
            snprintf(why, why_len, "'%s': its GOT cannot be read: %s", e->path,
                     memread_strerror(err));
        if (err && err != -ESRCH)
            err = err == -ENOTSUP ? -ENOTSUP : -EPROTO;
    }
    proc_maps_free(maps);
    if (!err)
        why[0] = '\0';
    return err;
#endif
}

/* ---- records -------------------------------------------------------------------- */

int otel_thread_parse_record(const void *buf, size_t len, struct otel_thread_record *out)
{
    const uint8_t *b = buf;
    *out = (struct otel_thread_record){0};
    if (len < OTEL_THREAD_RECORD_SIZE)
        return -EINVAL;
    out->valid = b[24];
    if (out->valid != 1)
        return -EAGAIN;
    memcpy(out->span.trace_id, b, 16);
    memcpy(out->span.span_id, b + 16, 8);
    memcpy(&out->attrs_size, b + 26, 2);
    bool any = false;
    for (size_t i = 0; i < 24 && !any; i++)
        any = b[i] != 0;
    out->span.set = any;
    return 0;
}

size_t otel_thread_attrs(const uint8_t *attrs, size_t len, size_t nkeys,
                         void (*fn)(void *arg, uint8_t key, const char *value, size_t vlen),
                         void *arg)
{
    size_t n = 0, at = 0;
    while (len - at >= 2) {
        uint8_t key = attrs[at], vlen = attrs[at + 1];
        if (len - at - 2 < vlen)
            break; /* the rest cannot hold the whole entry */
        if (key < nkeys && fn)
            fn(arg, key, (const char *)attrs + at + 2, vlen);
        at += 2u + vlen;
        n++;
    }
    return n;
}

/* ---- per sample ------------------------------------------------------------------ */

/*
 * What is kept per thread (direct-mapped by thread pointer, checked with the
 * TID: glibc reuses a finished thread's stack, and its thread pointer, for a
 * new thread): where the variable is in it, and the record address it held
 * at the last sample. That guess lets a sample read the pointer and the
 * record in one system call: a thread whose pointer did not move since (a
 * span longer than the sampling interval, or a writer that keeps one record
 * per thread and flips its valid byte) costs no second call.
 */
struct otel_slot {
    uint64_t tp, tid;
    uint64_t slot;     /* the variable's address in that thread, 0: not known */
    uint64_t last_ptr; /* its value at the last sample */
};

/* One thread's reads of a sample (the ranges are copied in this order). */
struct otel_read {
    uint64_t ptr;                          /* the variable */
    uint8_t rec[OTEL_THREAD_RECORD_SIZE];  /* the record it points to (or was guessed to) */
    uint64_t again;                        /* the variable again, after the record */
    uint8_t rec2[OTEL_THREAD_RECORD_SIZE]; /* the record again, after that */
};

struct otel_thread {
    struct memread *mr;
    struct otel_thread_locator loc;
    struct otel_thread_stats stats;
    struct otel_slot slots[OTEL_THREAD_SLOTS];
    /* per sample, one entry per thread of the result */
    struct otel_slot *slot_of[UNWIND_MAX_THREADS]; /* NULL: not read */
    uint64_t guess[UNWIND_MAX_THREADS];            /* the record address the first call read */
    struct otel_read rd[UNWIND_MAX_THREADS];
    struct memread_iov iov[4 * UNWIND_MAX_THREADS];
    bool bad[4 * UNWIND_MAX_THREADS];
    struct sample_span spans[UNWIND_MAX_THREADS];
};

int otel_thread_new(struct memread *mr, const struct otel_thread_locator *loc,
                    struct otel_thread **out)
{
    struct otel_thread *t = alloc_calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->mr = mr;
    t->loc = *loc;
    *out = t;
    return 0;
}

static struct otel_slot *otel_slot_of(struct otel_thread *t, uint64_t tp)
{
    return &t->slots[(size_t)((tp >> 12) * 0x9e3779b97f4a7c15ull >> 54) % OTEL_THREAD_SLOTS];
}

/* The variable's address in a dynamic model's thread with thread pointer
 * @tp, or 0 (the thread has no block for it, or it cannot be read: counted). */
static uint64_t otel_dynamic_where(struct otel_thread *t, uint64_t tp)
{
    const struct otel_thread_locator *l = &t->loc;
    uint64_t dtv;
    if (memread_read(t->mr, tp + 8, &dtv, sizeof(dtv)) || dtv < 16) {
        t->stats.faults++;
        return 0;
    }
    /* dtv[-1] is the dtv's length: an index past it was never allocated */
    uint64_t len = 0, block = 0;
    if (memread_read(t->mr, dtv - 16, &len, sizeof(len))) {
        t->stats.faults++;
        return 0;
    }
    if (l->module > len) {
        t->stats.unallocated++;
        return 0;
    }
    if (memread_read(t->mr, dtv + 16 * l->module, &block, sizeof(block))) {
        t->stats.faults++;
        return 0;
    }
    if (block == 0 || block == UINT64_MAX) { /* TLS_DTV_UNALLOCATED */
        t->stats.unallocated++;
        return 0;
    }
    return block + l->offset;
}

/* The kept state of the thread with thread pointer @tp and TID @tid, its
 * variable's address known; NULL when it has none (counted). */
static struct otel_slot *otel_thread_slot(struct otel_thread *t, uint64_t tp, uint64_t tid)
{
    struct otel_slot *s = otel_slot_of(t, tp);
    if (s->tp == tp && s->tid == tid && s->slot)
        return s;
    const struct otel_thread_locator *l = &t->loc;
    bool dynamic = l->model == OTEL_TLS_DESC_DYNAMIC || l->model == OTEL_TLS_GD;
    uint64_t where = dynamic ? otel_dynamic_where(t, tp) : tp + (uint64_t)l->tp_offset;
    if (!where)
        return NULL;
    *s = (struct otel_slot){.tp = tp, .tid = tid, .slot = where};
    return s;
}

/* Reads @n ranges; when the batch faults (one thread's range is bad), each
 * alone, marking the failed ones in @bad. Returns false when the process is gone. */
static bool otel_readv(struct otel_thread *t, const struct memread_iov *iov, size_t n, bool *bad)
{
    for (size_t i = 0; i < n; i++)
        bad[i] = false;
    int err = memread_readv(t->mr, iov, n);
    if (!err)
        return true;
    if (err == -ESRCH)
        return false;
    for (size_t i = 0; i < n; i++)
        bad[i] = memread_readv(t->mr, &iov[i], 1) != 0;
    return true;
}

/* Adds the ranges that read thread @i's record at @rec (and the variable
 * between two copies of it) to the iovecs at @k. */
static size_t otel_add_record(struct otel_thread *t, size_t i, uint64_t rec, size_t k)
{
    struct otel_read *r = &t->rd[i];
    t->iov[k++] = (struct memread_iov){.raddr = rec, .local = r->rec, .len = sizeof(r->rec)};
    t->iov[k++] = (struct memread_iov){.raddr = t->slot_of[i]->slot, .local = &r->again, .len = 8};
    t->iov[k++] = (struct memread_iov){.raddr = rec, .local = r->rec2, .len = sizeof(r->rec2)};
    return k;
}

/*
 * Thread @i's record at @rec was read by the three ranges at @bad: uses it
 * when it held still (the variable pointed to it before and after, both
 * copies alike, valid). Returns true when done with the thread (a span, none,
 * torn or a fault, counted), false when the ranges could not be read.
 */
static bool otel_use_record(struct otel_thread *t, size_t i, uint64_t rec, const bool *bad)
{
    struct otel_read *r = &t->rd[i];
    if (bad[0] || bad[1] || bad[2])
        return false;
    struct otel_thread_record parsed;
    if (r->again != rec || memcmp(r->rec, r->rec2, sizeof(r->rec)) != 0 ||
        otel_thread_parse_record(r->rec, sizeof(r->rec), &parsed) != 0) {
        t->stats.torn++; /* moved, or being written: no label rather than a wrong one */
    } else if (!parsed.span.set) {
        t->stats.none++;
    } else {
        t->spans[i] = parsed.span;
        t->stats.spans++;
    }
    return true;
}

const struct sample_span *otel_thread_sample(struct otel_thread *t, const struct unwind_result *r)
{
    size_t n = r->nthreads < UNWIND_MAX_THREADS ? r->nthreads : UNWIND_MAX_THREADS;
    struct sample_span *spans = t->spans;
    /* the first call: every thread's variable, and where it pointed last time */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct unwind_thread *th = &r->threads[i];
        spans[i].set = false;
        t->slot_of[i] = NULL;
        if (th->status != SAMPLE_OK || th->thread_id == 0)
            continue;
        t->stats.threads++;
        struct otel_slot *s = otel_thread_slot(t, th->thread_id, th->native_thread_id);
        if (!s)
            continue; /* counted as unallocated or a fault */
        t->slot_of[i] = s;
        t->guess[i] = s->last_ptr;
        t->iov[k++] = (struct memread_iov){.raddr = s->slot, .local = &t->rd[i].ptr, .len = 8};
        if (t->guess[i])
            k = otel_add_record(t, i, t->guess[i], k);
    }
    if (k == 0 || !otel_readv(t, t->iov, k, t->bad))
        return spans;
    /* the second call, only for the threads whose pointer moved */
    size_t j = 0, k2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t->slot_of[i])
            continue;
        const bool *bad = &t->bad[j];
        j += t->guess[i] ? 4 : 1;
        uint64_t ptr = t->rd[i].ptr;
        if (bad[0]) {
            t->stats.faults++;
            t->slot_of[i]->slot = 0; /* found again at the next sample */
            t->slot_of[i] = NULL;
            continue;
        }
        t->slot_of[i]->last_ptr = ptr;
        if (ptr == 0) {
            t->stats.none++;
            t->slot_of[i] = NULL;
            continue;
        }
        if (ptr == t->guess[i] && otel_use_record(t, i, ptr, bad + 1)) {
            t->slot_of[i] = NULL;
            continue;
        }
        t->guess[i] = 0; /* read at ptr in the second call */
        k2 = otel_add_record(t, i, ptr, k2);
    }
    if (k2 == 0 || !otel_readv(t, t->iov, k2, t->bad))
        return spans;
    j = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t->slot_of[i])
            continue;
        if (!otel_use_record(t, i, t->rd[i].ptr, &t->bad[j])) {
            t->stats.faults++;
            t->slot_of[i]->last_ptr = 0;
        }
        j += 3;
    }
    return spans;
}

const struct otel_thread_locator *otel_thread_locator_of(const struct otel_thread *t)
{
    return &t->loc;
}

struct otel_thread_stats otel_thread_stats(const struct otel_thread *t)
{
    return t->stats;
}

void otel_thread_free(struct otel_thread *t)
{
    alloc_free(t);
}
