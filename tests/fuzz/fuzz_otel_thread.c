/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the OpenTelemetry thread context (unwind/otel_thread.c) and
 * the ELF reading that finds it (discovery/elf_sections.c). The input is
 * read three ways: as a thread's record (the fixed part, then its
 * attributes walked: every value reported lies inside the input); as an ELF
 * image in which the TLS symbol otel_thread_ctx_v1 and the relocations that
 * reach it are looked for; and as the memory of a process, mapped at one
 * address, that a reader with a locator made from its first bytes samples
 * (thread pointers, dtvs and records are all the input's words).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "discovery/elf_sections.h"
#include "memread_fake.h"
#include "unwind/otel_thread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_IMAGE_RADDR 0x10000ull
#define FUZZ_THREADS     8u

struct walk {
    const uint8_t *lo, *hi;
    size_t nkeys, n;
};

static void on_attr(void *arg, uint8_t key, const char *value, size_t vlen)
{
    struct walk *w = arg;
    PYPROFD_ASSERT(key < w->nkeys);
    PYPROFD_ASSERT((const uint8_t *)value >= w->lo && vlen <= 255 &&
                   vlen <= (size_t)(w->hi - (const uint8_t *)value));
    w->n++;
}

static void fuzz_record(const uint8_t *buf, size_t size)
{
    struct otel_thread_record rec;
    int rc = otel_thread_parse_record(buf, size, &rec);
    PYPROFD_ASSERT(rc == 0 || rc == -EAGAIN || rc == -EINVAL);
    PYPROFD_ASSERT(rc == 0 || !rec.span.set);
    PYPROFD_ASSERT((rc == -EINVAL) == (size < OTEL_THREAD_RECORD_SIZE));
    if (rc != 0)
        return;
    PYPROFD_ASSERT(rec.valid == 1);
    /* the attributes the record says it has, as far as the input holds them */
    size_t avail = size - OTEL_THREAD_RECORD_SIZE;
    size_t len = rec.attrs_size < avail ? rec.attrs_size : avail;
    const uint8_t *attrs = buf + OTEL_THREAD_RECORD_SIZE;
    static const size_t nkeys[] = {0, 1, 3, 256};
    size_t seen = SIZE_MAX;
    for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(nkeys); k++) {
        struct walk w = {.lo = attrs, .hi = attrs + len, .nkeys = nkeys[k]};
        size_t n = otel_thread_attrs(attrs, len, nkeys[k], on_attr, &w);
        PYPROFD_ASSERT(n <= len / 2 && w.n <= n);
        PYPROFD_ASSERT(seen == SIZE_MAX || n == seen); /* the walk does not depend on the map */
        PYPROFD_ASSERT(nkeys[k] < 256 || w.n == n);
        seen = n;
    }
}

static void fuzz_elf(const uint8_t *buf, size_t size)
{
    struct elf_file *ef = NULL;
    if (elf_file_parse(buf, size, &ef) != 0)
        return;
    struct elf_tls_segment seg;
    bool tls = elf_file_tls(ef, &seg);
    PYPROFD_ASSERT(!tls || seg.align >= 1);
    struct elf_tls_ref ref;
    int rc = elf_file_find_tls(ef, buf, size, OTEL_THREAD_SYMBOL, &ref);
    PYPROFD_ASSERT(rc == 0 || rc == -ENOMEM);
    PYPROFD_ASSERT(rc != 0 || !ref.found || tls); /* only a file with TLS defines it */
    PYPROFD_ASSERT(rc != 0 || ref.found ||
                   (ref.desc == 0 && ref.gd_module == 0 && ref.gd_offset == 0 && ref.ie == 0));
    elf_file_free(ef);
}

static uint64_t word(const uint8_t *buf, size_t size, size_t at)
{
    uint64_t v = 0;
    if (at + 8 <= size)
        memcpy(&v, buf + at, 8);
    return v;
}

static void fuzz_sample(const uint8_t *buf, size_t size)
{
    if (size < 16)
        return;
    struct memread_fake *fake;
    struct memread *mr;
    if (memread_fake_open(&fake, &mr) != 0)
        return;
    struct otel_thread_locator loc = {0};
    loc.model = (enum otel_thread_model)(buf[0] % 6);
    loc.tp_offset = (int64_t)word(buf, size, 8) >> (buf[1] & 63);
    loc.module = buf[2] % 8;
    loc.offset = buf[3];
    struct unwind_thread th[FUZZ_THREADS] = {{0}};
    struct unwind_result r = {.threads = th};
    for (size_t i = 0; i < FUZZ_THREADS && 16 + 8 * i + 8 <= size; i++) {
        uint64_t w = word(buf, size, 16 + 8 * i);
        /* a thread pointer into the image, or the word itself */
        th[i].thread_id = (buf[4] >> (i % 8)) & 1 ? FUZZ_IMAGE_RADDR + w % size : w;
        th[i].native_thread_id = 100 + i % 3;
        th[i].status = (buf[5] >> (i % 8)) & 1 ? SAMPLE_READ_FAULT : SAMPLE_OK;
        r.nthreads = i + 1;
    }
    struct otel_thread *t = NULL;
    if (memread_fake_add(fake, FUZZ_IMAGE_RADDR, buf, size) == 0 &&
        otel_thread_new(mr, &loc, &t) == 0) {
        for (int pass = 0; pass < 2; pass++) { /* the second with the places kept */
            const struct sample_span *s = otel_thread_sample(t, &r);
            size_t set = 0;
            for (size_t i = 0; i < r.nthreads; i++) {
                PYPROFD_ASSERT(!s[i].set || (th[i].status == SAMPLE_OK && th[i].thread_id));
                set += s[i].set;
            }
            struct otel_thread_stats st = otel_thread_stats(t);
            PYPROFD_ASSERT(st.spans <= st.threads && st.torn <= st.threads);
            PYPROFD_ASSERT(st.threads <= (uint64_t)(pass + 1) * r.nthreads);
            PYPROFD_ASSERT(set <= st.spans);
        }
        PYPROFD_ASSERT(otel_thread_locator_of(t)->model == loc.model);
    }
    otel_thread_free(t);
    memread_free(mr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly @size bytes: a read past it is ASan's to catch */
    uint8_t *buf = alloc_malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    fuzz_record(buf, size);
    fuzz_elf(buf, size);
    fuzz_sample(buf, size);
    alloc_free(buf);
    return 0;
}
