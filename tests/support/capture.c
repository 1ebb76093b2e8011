/* SPDX-License-Identifier: MIT */
/*
 * capture.c: pyprofd-capture, a test tool (never installed) that records
 * what the unwinder reads from a live process during one sample, for replay
 * by tests/unit/agent/unwind/test_unwind_replay.c through the fake backend.
 *
 *   pyprofd-capture PID OUTDIR FLAGS
 *
 * FLAGS is the enum unwind_flags value. Writes OUTDIR/meta.txt (version word,
 * runtime address, section size, flags), OUTDIR/memory.bin (every successful
 * read: u64 address, u64 length, bytes) and OUTDIR/expected.txt (the golden
 * text of the sample). Torn samples are retried; only a clean one is kept.
 * scripts/capture-unwind-fixtures.sh drives it.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/strnum.h"
#include "discovery/pyruntime.h"
#include "golden.h"
#include "memread/memread.h"
#include "unwind/unwind.h"

struct recorder {
    struct memread *inner;
    FILE *out;
};

static int recorder_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct recorder *r = priv;
    int err = memread_readv(r->inner, iov, n);
    if (err)
        return err;
    for (size_t i = 0; i < n; i++) {
        uint64_t hdr[2] = {iov[i].raddr, iov[i].len};
        fwrite(hdr, sizeof(hdr), 1, r->out);
        fwrite(iov[i].local, 1, iov[i].len, r->out);
    }
    return 0;
}

static const struct memread_ops recorder_ops = {
    .name = "recorder",
    .readv = recorder_readv,
    .close = NULL,
};

static bool clean(const struct unwind_result *r)
{
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].status != SAMPLE_OK)
            return false;
    return r->nthreads > 0;
}

int main(int argc, char **argv)
{
    int64_t pid, flags;
    if (argc != 4 || strnum_parse_i64(argv[1], 1, INT32_MAX, &pid) ||
        strnum_parse_i64(argv[3], 0, 7, &flags)) {
        fprintf(stderr, "usage: pyprofd-capture PID OUTDIR FLAGS\n");
        return 2;
    }
    char path[4096], why[512];
    struct memread *real = NULL;
    if (memread_open((pid_t)pid, MEMREAD_VM, &real)) {
        fprintf(stderr, "capture: cannot open pid %" PRId64 "\n", pid);
        return 1;
    }
    struct pyruntime rt;
    if (pyruntime_locate("/proc", (pid_t)pid, real, &rt, why, sizeof(why))) {
        fprintf(stderr, "capture: %s\n", why);
        return 1;
    }
    for (int attempt = 0; attempt < 50; attempt++) {
        snprintf(path, sizeof(path), "%s/memory.bin", argv[2]);
        struct recorder rec = {.inner = real, .out = fopen(path, "wb")};
        struct memread *mr = NULL;
        if (!rec.out || memread_new_custom(&recorder_ops, &rec, &mr))
            return 1;
        struct unwinder *u = NULL;
        if (unwinder_new(mr, &rt, &u, why, sizeof(why))) {
            fprintf(stderr, "capture: %s\n", why);
            return 1;
        }
        const struct unwind_result *res;
        enum sample_status st;
        int err = unwinder_sample(u, (unsigned)flags, &res, &st);
        fclose(rec.out);
        if (!err && clean(res)) {
            snprintf(path, sizeof(path), "%s/expected.txt", argv[2]);
            FILE *exp = fopen(path, "w");
            golden_write(res, exp);
            fclose(exp);
            snprintf(path, sizeof(path), "%s/meta.txt", argv[2]);
            FILE *meta = fopen(path, "w");
            fprintf(meta,
                    "version 0x%" PRIx64 "\nruntime 0x%" PRIx64 "\nsection_size %" PRIu64
                    "\nflags %" PRId64 "\n",
                    rt.version.hex, rt.raddr, rt.section_size, flags);
            if (rt.no_table) /* 3.11, 3.12: what discovery found by symbols */
                fprintf(meta,
                        "no_table 1\ncode_type 0x%" PRIx64 "\nunicode_type 0x%" PRIx64
                        "\nnone_object 0x%" PRIx64 "\n",
                        rt.code_type, rt.unicode_type, rt.none_object);
            if (rt.ns_pid) /* 3.9, 3.10: the main thread's TID, where glibc keeps it */
                fprintf(meta, "ns_pid %d\n", (int)rt.ns_pid);
            fclose(meta);
            unwinder_free(u);
            memread_free(mr);
            memread_free(real);
            return 0;
        }
        unwinder_free(u);
        memread_free(mr);
    }
    fprintf(stderr, "capture: no clean sample in 50 attempts\n");
    return 1;
}
