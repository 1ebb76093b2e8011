/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the OpenTelemetry Python SDK's current span read through
 * thread contexts (agent/unwind/otel_sdk.c). A valid image of the chain is
 * built (tests/support/pyctx_image.h), the input patches it, and the reader
 * samples 1-4 threads over it a few times. Target memory is untrusted input:
 * whatever it holds, sampling ends in counts, never a crash or a hang, and
 * the counts add up.
 *
 * Input: u8 minor (9 + value % 7), u8 image flags (enum pyctx_image_flags),
 * u8 threads (bits 0-1: count - 1; bits 2-3: thread 0 published and thread 1
 * not sampled; bit 4: threads 0 and 1 share a thread state; bit 5: the clock
 * moves a second between samples), u8 each thread's context (2 bits each:
 * the context in a span, the one without, one without the SDK, NULL), then
 * patches over the image until the input ends:
 *   u8 op < 0x80: u16 offset (LE), then op & 0x3f bytes written there;
 *   u8 op >= 0x80: u16 offset, u8 object, i8 delta: the address of the
 *   image's object (enum pyctx_image_obj, modulo their count) plus delta,
 *   written as a word at the offset (rounded down to 8).
 * Offsets are taken modulo the image's length. With no patch the ids read
 * must be exactly the image's.
 */
#include "base/compat.h"

#include "clock_fake.h"
#include "memread_fake.h"
#include "pyctx_image.h"
#include "unwind/otel_sdk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_THREADS 4u
#define FUZZ_PASSES  3
#define FUZZ_WORD    1u

/* Applies the patches of @p (@n bytes) to @img's bytes; returns how many. */
static unsigned fuzz_patch(struct pyctx_image *img, const uint8_t *p, size_t n)
{
    size_t len;
    uint8_t *mem = pyctx_image_bytes(img, &len);
    unsigned count = 0;
    size_t i = 0;
    while (i + 3 <= n) {
        uint8_t op = p[i];
        size_t off = (size_t)(p[i + 1] | p[i + 2] << 8) % len;
        i += 3;
        if (op & 0x80) {
            if (i + 2 > n)
                break;
            enum pyctx_image_obj which = (enum pyctx_image_obj)(p[i] % PYCTX_IMAGE_NOBJ);
            uint64_t v = pyctx_image_addr(img, which) + (uint64_t)(int64_t)(int8_t)p[i + 1];
            i += 2;
            off &= ~(size_t)7;
            if (off + 8 <= len)
                memcpy(mem + off, &v, 8);
        } else {
            size_t k = op & 0x3fu;
            if (k > n - i)
                k = n - i;
            if (k > len - off)
                k = len - off;
            memcpy(mem + off, p + i, k);
            i += op & 0x3fu;
        }
        count++;
    }
    return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    unsigned minor = 9 + data[0] % 7;
    struct pyctx_image *img = pyctx_image_new(minor, data[1] & 0x1fu);
    if (!img)
        return 0;
    unsigned patches = fuzz_patch(img, data + 4, size - 4);
    struct memread_fake *fake;
    struct memread *mr;
    if (memread_fake_open(&fake, &mr) != 0) {
        pyctx_image_free(img);
        return 0;
    }
    struct clock_fake cf = {.mono_ns = 1};
    struct clock clock = clock_fake_clock(&cf);
    struct otel_sdk *s = NULL;
    char why[128];
    if (pyctx_image_install(img, fake) != 0 ||
        otel_sdk_new(mr, minor, false, &clock, &s, why, sizeof(why)) != 0)
        goto out;

    static const enum pyctx_image_obj ctxs[4] = {PYCTX_IMAGE_CONTEXT, PYCTX_IMAGE_CONTEXT_NOSPAN,
                                                 PYCTX_IMAGE_CONTEXT_NOSDK, PYCTX_IMAGE_NOBJ};
    struct unwind_thread th[FUZZ_THREADS];
    struct sample_span pub[FUZZ_THREADS];
    memset(th, 0, sizeof(th));
    memset(pub, 0, sizeof(pub));
    struct unwind_result r = {.nthreads = 1 + (data[2] & 3u), .threads = th};
    for (size_t i = 0; i < r.nthreads; i++) {
        th[i].status = SAMPLE_OK;
        th[i].tstate_raddr = 0x5a0000000000ull + 0x1010u * i;
        th[i].words[FUZZ_WORD] = pyctx_image_addr(img, ctxs[(data[3] >> (2 * i)) & 3u]);
    }
    if (data[2] & 4u) {
        memset(pub[0].trace_id, 0xa5, 16);
        memset(pub[0].span_id, 0x5a, 8);
        pub[0].set = true;
    }
    if ((data[2] & 8u) && r.nthreads > 1)
        th[1].status = SAMPLE_READ_FAULT;
    if ((data[2] & 16u) && r.nthreads > 1)
        th[1].tstate_raddr = th[0].tstate_raddr;

    struct sample_span want;
    pyctx_image_ids(img, &want);
    struct otel_sdk_stats before = otel_sdk_stats(s);
    enum otel_sdk_state was = otel_sdk_state(s);
    for (int pass = 0; pass < FUZZ_PASSES; pass++) {
        const struct sample_span *sp = otel_sdk_sample(s, &r, FUZZ_WORD, pub);
        struct otel_sdk_stats st = otel_sdk_stats(s);
        enum otel_sdk_state now = otel_sdk_state(s);
        uint64_t set = 0, looked = 0;
        for (size_t i = 0; i < r.nthreads; i++) {
            if (pub[i].set) {
                PYPROFD_ASSERT(sp[i].set && memcmp(&sp[i], &pub[i], sizeof(pub[i])) == 0);
                continue;
            }
            if (th[i].status != SAMPLE_OK) {
                PYPROFD_ASSERT(!sp[i].set);
                continue;
            }
            looked++;
            if (!sp[i].set)
                continue;
            set++;
            static const uint8_t zero[8];
            PYPROFD_ASSERT(memcmp(sp[i].span_id, zero, 8) != 0); /* 0 is INVALID_SPAN */
            /* the image as built: exactly its ids, and only where the span is */
            PYPROFD_ASSERT(patches > 0 ||
                           (th[i].words[FUZZ_WORD] == pyctx_image_addr(img, PYCTX_IMAGE_CONTEXT) &&
                            memcmp(sp[i].trace_id, want.trace_id, 16) == 0 &&
                            memcmp(sp[i].span_id, want.span_id, 8) == 0));
        }
        /* every thread looked at is counted once, as exactly one outcome */
        PYPROFD_ASSERT(st.threads == st.spans + st.none + st.torn + st.faults);
        PYPROFD_ASSERT(st.threads - before.threads <= looked);
        PYPROFD_ASSERT(st.spans - before.spans == set);
        PYPROFD_ASSERT(st.cached - before.cached <= st.threads - before.threads);
        PYPROFD_ASSERT(minor <= 13 || st.cached == 0);
        PYPROFD_ASSERT(st.searches - before.searches <= 1);
        PYPROFD_ASSERT(now == OTEL_SDK_SEARCHING || st.searches > 0);
        /* the states only go forward: searching, then active or invalid */
        PYPROFD_ASSERT(was == OTEL_SDK_SEARCHING || now == was ||
                       (was == OTEL_SDK_ACTIVE && now == OTEL_SDK_INVALID));
        PYPROFD_ASSERT(now != OTEL_SDK_INVALID || otel_sdk_why(s)[0] != '\0');
        PYPROFD_ASSERT(now != OTEL_SDK_ACTIVE || otel_sdk_why(s)[0] == '\0');
        /* the image as built: found at once, every thread counted, no torn or fault */
        if (patches == 0) {
            bool any_sdk = false;
            for (size_t i = 0; i < r.nthreads; i++)
                any_sdk |=
                    th[i].status == SAMPLE_OK &&
                    (th[i].words[FUZZ_WORD] == pyctx_image_addr(img, PYCTX_IMAGE_CONTEXT) ||
                     th[i].words[FUZZ_WORD] == pyctx_image_addr(img, PYCTX_IMAGE_CONTEXT_NOSPAN));
            PYPROFD_ASSERT(now == (any_sdk ? OTEL_SDK_ACTIVE : OTEL_SDK_SEARCHING));
            PYPROFD_ASSERT(st.torn == 0 && st.faults == 0);
            PYPROFD_ASSERT(now != OTEL_SDK_ACTIVE || st.threads - before.threads == looked);
        }
        before = st;
        was = now;
        if (data[2] & 32u)
            clock_fake_advance(&cf, 1000000000ull);
    }
out:
    otel_sdk_free(s);
    memread_free(mr);
    pyctx_image_free(img);
    return 0;
}
