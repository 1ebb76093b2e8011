/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the asyncio task-graph walk (agent/unwind/asyncio*.c,
 * python/pyasync.c) over an arbitrary memory image. Task lists, awaited-by
 * links and sets, coroutine chains and names are untrusted input; whatever
 * they hold, a sample must end in statuses, never a crash, a hang or a leak,
 * and every stack must stay within its caps.
 *
 * Input: u8 minor (14 + value % 2), u8 mode (running / all), u64 runtime
 * address, u64 .PyRuntime size, u64 asyncio table address, then records of
 * u64 address, u64 length, bytes (tests/support/pyimage.c's
 * pyimage_write_records; the seeds are the synthetic images of
 * test_asyncio.c, written with PYPROFD_WRITE_ASYNC_SEEDS=DIR).
 */
#include "base/compat.h"

#include "discovery/pyruntime.h"
#include "memread_fake.h"
#include "unwind/asyncio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_RECORDS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 26)
        return 0;
    struct pyruntime rt = {.initialized = true};
    unsigned minor = 14 + data[0] % 2;
    enum asyncio_mode mode = data[1] & 1 ? ASYNCIO_ALL : ASYNCIO_RUNNING;
    uint64_t table;
    memcpy(&rt.raddr, data + 2, 8);
    memcpy(&rt.section_size, data + 10, 8);
    memcpy(&table, data + 18, 8);
    rt.version = (struct py_version){
        .major = 3, .minor = minor, .level = 0xF, .hex = 0x030000f0u | (minor << 16)};
    struct memread_fake *fake;
    struct memread *mr;
    if (memread_fake_open(&fake, &mr))
        return 0;
    size_t at = 26;
    for (unsigned n = 0; at + 16 <= size && n < FUZZ_MAX_RECORDS; n++) {
        uint64_t hdr[2];
        memcpy(hdr, data + at, sizeof(hdr));
        at += 16;
        size_t len = hdr[1] < size - at ? (size_t)hdr[1] : size - at;
        if (memread_fake_add(fake, hdr[0], data + at, len))
            break;
        at += len;
    }
    struct unwinder *u = NULL;
    struct asyncio *a = NULL;
    char why[256];
    if (unwinder_new(mr, &rt, &u, why, sizeof(why)) == 0 &&
        asyncio_new(u, mr, &rt, mode, &a, why, sizeof(why)) == 0) {
        /* an invalid table leaves plain stacks: sampled all the same */
        int err = asyncio_attach_table(a, table, PYASYNC_TABLE_SIZE);
        (void)err;
        for (int i = 0; i < 2; i++) {
            const struct unwind_result *r;
            const struct asyncio_result *ar;
            enum sample_status st;
            if (unwinder_sample(u, 0, &r, &st) || asyncio_sample(a, r, &ar))
                continue;
            PYPROFD_ASSERT(ar->nsamples >= r->nthreads);
            for (size_t k = 0; k < ar->nsamples; k++) {
                const struct asyncio_sample *s = &ar->samples[k];
                PYPROFD_ASSERT(s->thread < r->nthreads);
                PYPROFD_ASSERT(s->nframes <= UNWIND_MAX_DEPTH);
                for (size_t f = 0; f < s->nframes; f++)
                    PYPROFD_ASSERT(strlen(s->frames[f].function) < 4 * 1024 + 1);
                PYPROFD_ASSERT(!s->task_name || strlen(s->task_name) <= ASYNCIO_NAME_MAX);
            }
            PYPROFD_ASSERT(ar->ntasks <= ASYNCIO_MAX_TASKS);
        }
    }
    asyncio_free(a);
    unwinder_free(u);
    memread_free(mr);
    return 0;
}
