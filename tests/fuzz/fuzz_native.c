/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: unwinding a perf sample's registers and stack copy
 * (agent/unwind/native.c). The copy is another process's memory: any bytes,
 * any stack pointer, must end in a bounded list of frames, never in a read
 * outside the copy. The sampled IP is placed in this program's own code (so
 * that the CFI of a real binary is used); the rest comes from the input.
 */
#include "base/compat.h"

#include <unistd.h>

#include "unwind/native.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct native *n;
    static bool tried;
    if (!tried) {
        char why[256];
        tried = true;
        if (native_new("/proc", getpid(), &n, why, sizeof(why)))
            n = NULL;
    }
    if (!n || size < 8 * PERFSAMPLE_NREGS)
        return 0;
    struct perfsample_record r = {
        .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(), .regs_valid = true};
    for (size_t i = 0; i < PERFSAMPLE_NREGS; i++)
        memcpy(&r.regs[i], data + 8 * i, 8);
    /* an IP in real code: this function, some bytes in */
    r.regs[PERFSAMPLE_IP] =
        (uint64_t)(uintptr_t)LLVMFuzzerTestOneInput + (r.regs[PERFSAMPLE_IP] % 256);
    r.stack = data + 8 * PERFSAMPLE_NREGS;
    r.stack_len = (size - 8 * PERFSAMPLE_NREGS) & ~(size_t)7;
    if (!r.stack_len)
        r.stack = NULL;
    static struct native_frame frames[NATIVE_MAX_FRAMES];
    int k = native_unwind(n, &r, frames, NATIVE_MAX_FRAMES);
    PYPROFD_ASSERT(k == -ENOENT || (k >= 0 && k <= (int)NATIVE_MAX_FRAMES));
    for (int i = 0; i < k; i++)
        PYPROFD_ASSERT(!frames[i].function || strlen(frames[i].function) < 65536);
    return 0;
}
