/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: unwinding a perf sample's registers and stack copy
 * (agent/unwind/native.c), and joining the frames with a Python stack
 * (agent/unwind/mixed.c). The copy is another process's memory: any bytes,
 * any stack pointer, must end in a bounded list of frames, never in a read
 * outside the copy. The sampled IP is placed in this program's own code (so
 * that the CFI of a real binary is used); the rest comes from the input.
 * The Python stack's entry frames take their addresses from the copy's
 * words (the other half of the join is the target's memory too): the join
 * must agree, cut or disagree, and stay within its bounds.
 */
#include "base/compat.h"

#include <unistd.h>

#include "unwind/mixed.h"
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
    if (k < 0)
        return 0;
    static struct mixed *m;
    if (!m && mixed_new(&m))
        return 0;
    /* Python frames and entry markers, their addresses from the copy */
    static struct unwind_frame py[64];
    size_t npy = 0;
    for (size_t off = 0; off + 8 <= r.stack_len && npy < 64; off += 8) {
        uint64_t w;
        memcpy(&w, r.stack + off, 8);
        py[npy++] = (w & 1) ? (struct unwind_frame){.kind = UNWIND_FRAME_NATIVE,
                                                    .function = "<native>",
                                                    .file = "~",
                                                    .frame_raddr = w >> 1}
                            : (struct unwind_frame){
                                  .kind = UNWIND_FRAME_PYTHON, .function = "f", .file = "f.py"};
    }
    const struct unwind_frame *out = NULL;
    size_t nout = 0;
    enum mixed_result res = mixed_merge(m, frames, (size_t)k, false, py, npy, &out, &nout);
    if (res == MIXED_OK || res == MIXED_CUT) {
        PYPROFD_ASSERT(nout <= (size_t)k + npy + 1);
        for (size_t i = 0; i < nout; i++)
            PYPROFD_ASSERT(out[i].function && out[i].file);
    }
    /* and with C frames from the input too, some named as CPython's loop
     * (the join before 3.12), the unwinding complete or not */
    static struct native_frame syn[64];
    size_t nsyn = 0;
    uint64_t sp = 0x1000;
    for (size_t off = 0; off + 8 <= r.stack_len && nsyn < 64; off += 8) {
        uint64_t w;
        memcpy(&w, r.stack + off, 8);
        sp += (w >> 8) & 0xff;
        syn[nsyn++] = (struct native_frame){
            .pc = w, .sp = sp, .function = (w & 2) ? "_PyEval_EvalFrameDefault" : NULL};
    }
    res = mixed_merge(m, syn, nsyn, (size & 1) != 0, py, npy, &out, &nout);
    if (res == MIXED_OK || res == MIXED_CUT) {
        PYPROFD_ASSERT(nout <= nsyn + npy + 1);
        for (size_t i = 0; i < nout; i++)
            PYPROFD_ASSERT(out[i].function && out[i].file);
    }
    nout = mixed_python_only(m, py, npy, &out);
    PYPROFD_ASSERT(nout <= npy);
    return 0;
}
