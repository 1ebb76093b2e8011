/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the pprof encoder and the gzip reader (agent/pprof/).
 *
 * Input byte 0 selects the mode. Even: the rest is untrusted bytes for
 * gzip_decompress() and, when they inflate, protobuf-c's Profile unpacker;
 * whatever decodes is checked and rendered, which must not crash on bad
 * indices. Odd: the rest is a little program of samples over a palette of
 * frames, added to a window with tiny caps (so drops happen), encoded, decoded
 * and checked: every consumer rule holds, and the sample and time totals are
 * those of the samples the window accepted. Byte 1 (odd mode) scales the
 * output cap, so -E2BIG is reached too.
 *
 * A sample is: thread (byte % 4), task (byte % 3, 0: none), count (byte % 8
 * + 1), depth (byte % 8), then depth palette indices (byte % 16).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "pprof/gzip.h"
#include "pprof/pprof_build.h"
#include "pprof_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_F(fn_, file_, first, line, col)                                                       \
    {                                                                                              \
        .kind = UNWIND_FRAME_PYTHON, .function = (fn_), .file = (file_), .first_line = (first),    \
        .code_raddr = 0x1000u + (first), .pos = {(line), (line), (col), (col) + 1},                \
    }

static const struct unwind_frame fuzz_palette[16] = {
    FUZZ_F("<module>", "/a.py", 1, 3, 0),
    FUZZ_F("main", "/a.py", 5, 7, 4),
    FUZZ_F("main", "/a.py", 5, 8, 4),
    FUZZ_F("Klass.method", "/a.py", 20, 22, 8),
    FUZZ_F("Klass.method.<locals>.inner", "/a.py", 24, 25, 12),
    FUZZ_F("<lambda>", "/b.py", 1, 1, 30),
    FUZZ_F("work", "/b.py", 10, 11, 4),
    FUZZ_F("work", "/b.py", 10, 12, LINETABLE_UNKNOWN),
    FUZZ_F("cpu", "thread_id", 1, 1, 0),
    FUZZ_F("", "", 0, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN),
    FUZZ_F("n\xc3\xa4me", "/\xe2\x82\xac.py", 2, 2, 2),
    FUZZ_F("quote\"and\\", "/c.py", 3, 4, 5),
    {.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"},
    {.kind = UNWIND_FRAME_NATIVE, .function = "<native>", .file = "~"},
    {.kind = UNWIND_FRAME_UNREADABLE, .function = "<unknown function>", .file = "<unknown file>"},
    FUZZ_F("deep", "/d.py", 1000000, 2000000, 1000),
};

static const char *const fuzz_threads[4] = {"MainThread", "worker", "", NULL};
static const char *const fuzz_tasks[3] = {NULL, "task-1", "task-2"};

static void fuzz_decode(const uint8_t *data, size_t size)
{
    Perftools__Profiles__Profile *p = NULL;
    if (pprof_test_decode(data, size, &p))
        return;
    char why[256];
    (void)pprof_test_check(p, why, sizeof(why));
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        pprof_test_render(p, null);
        fclose(null);
    }
    pprof_test_free(p);
}

static void fuzz_round_trip(const uint8_t *data, size_t size)
{
    struct agg_limits lim = {.string_bytes = 256,
                             .strings = 24,
                             .functions = 10,
                             .locations = 12,
                             .samples = 12,
                             .stack_slots = 48,
                             .threads = 4};
    struct agg *a = NULL;
    if (agg_new(&lim, &a))
        return;
    size_t cap = size ? (size_t)data[0] * 16 : 0; /* 0: the default cap */
    size_t i = size ? 1 : 0;
    int64_t count = 0, nanos = 0;
    while (i + 4 <= size) {
        uint64_t thread = data[i] % 4u;
        const char *task = fuzz_tasks[data[i + 1] % 3u];
        int64_t n = data[i + 2] % 8 + 1;
        size_t depth = data[i + 3] % 8u;
        i += 4;
        struct unwind_frame frames[8];
        for (size_t k = 0; k < depth; k++)
            frames[k] = fuzz_palette[i + k < size ? data[i + k] % 16u : 0];
        i += depth;
        if (agg_add_in(a, frames, depth, 100 + thread, 0, fuzz_threads[thread], task, n,
                       n * 1000) == 0) {
            count += n;
            nanos += n * 1000;
        }
    }

    struct pprof_meta m = {
        .value_type = "wall", .value_unit = "nanoseconds", .period_ns = 1000, .max_bytes = cap};
    uint8_t *gz = NULL;
    size_t len = 0;
    int err = pprof_build(a, &m, &gz, &len);
    PYPROFD_ASSERT(err == 0 || err == -E2BIG);
    if (err == 0) {
        PYPROFD_ASSERT(cap == 0 || len <= cap);
        Perftools__Profiles__Profile *p = NULL;
        PYPROFD_ASSERT(pprof_test_decode(gz, len, &p) == 0);
        char why[256] = "";
        int bad = pprof_test_check(p, why, sizeof(why));
        if (bad)
            fprintf(stderr, "fuzz_pprof_roundtrip: profile breaks a consumer rule: %s\n", why);
        PYPROFD_ASSERT(bad == 0);
        PYPROFD_ASSERT(p->n_sample == agg_sample_count(a));
        int64_t c = 0, t = 0;
        for (size_t k = 0; k < p->n_sample; k++) {
            c += p->sample[k]->value[0];
            t += p->sample[k]->value[1];
        }
        PYPROFD_ASSERT(c == count && t == nanos);
        pprof_test_free(p);
        alloc_free(gz);
    }
    agg_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_round_trip(data + 1, size - 1);
    else
        fuzz_decode(data + 1, size - 1);
    return 0;
}
