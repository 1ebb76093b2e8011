/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the unwinder over an arbitrary memory image
 * (agent/unwind/unwind*.c, python/pyabi.c, unwind/pystr.c, linetable.c).
 * Target memory is untrusted input; whatever it holds, attaching and
 * sampling must end in a status, never a crash, a hang or a leak.
 *
 * Input: u8 minor (13 + value % 3), u8 unwind flags (bits 0-2 as
 * UNWIND_ALL_THREADS, UNWIND_NATIVE, UNWIND_NO_GC; bit 3: a free-threaded
 * build: its rules and, on 3.14+, per-thread bytecode; bit 4:
 * UNWIND_OPCODES), u64 runtime address,
 * u64 .PyRuntime size, then records of u64 address, u64 length, bytes (the
 * format of tests/fixtures/unwind/<case>/memory.bin, whose recordings of real
 * processes are the seeds: tests/fuzz/make_seeds.py).
 */
#include "base/compat.h"

#include "discovery/pyruntime.h"
#include "memread_fake.h"
#include "unwind/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_RECORDS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 18)
        return 0;
    struct pyruntime rt = {.initialized = true};
    unsigned minor = 13 + data[0] % 3;
    unsigned flags = (data[1] & 7u) | ((data[1] & 16) ? (unsigned)UNWIND_OPCODES : 0u);
    bool free_threaded = data[1] & 8;
    memcpy(&rt.raddr, data + 2, 8);
    memcpy(&rt.section_size, data + 10, 8);
    /* the version word the table itself will be checked against */
    rt.version = (struct py_version){.major = 3,
                                     .minor = minor,
                                     .level = 0xF,
                                     .hex = 0x030000f0u | (minor << 16),
                                     .free_threaded = free_threaded};
    struct memread_fake *fake;
    struct memread *mr;
    if (memread_fake_open(&fake, &mr))
        return 0;
    size_t at = 18;
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
    char why[256];
    if (unwinder_new(mr, &rt, &u, why, sizeof(why)) == 0) {
        const struct unwind_result *r;
        enum sample_status st;
        for (int i = 0; i < 2; i++) {
            if (unwinder_sample(u, flags, &r, &st) == 0) {
                PYPROFD_ASSERT(r->nthreads <= UNWIND_MAX_THREADS);
                for (size_t t = 0; t < r->nthreads; t++) {
                    PYPROFD_ASSERT(r->threads[t].nframes <= UNWIND_MAX_DEPTH);
                    for (size_t k = 0; k < r->threads[t].nframes; k++)
                        PYPROFD_ASSERT(strlen(r->threads[t].frames[k].function) < 4 * 1024 + 1);
                }
            }
        }
        unwinder_free(u);
    } else {
        PYPROFD_ASSERT(memchr(why, '\0', sizeof(why)) != NULL);
    }
    memread_free(mr);
    return 0;
}
