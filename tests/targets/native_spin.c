/* SPDX-License-Identifier: MIT */
/*
 * pyprofd test library for native_dlopen.py: an exported function,
 * pyprofd_spin(), that spends its time in a static one, churn(). Built
 * stripped (cc -O2 -shared -fPIC -s) by tests/integration/test_native.py:
 * pyprofd_spin keeps its name (.dynsym), churn has none and must show as
 * the library's file and the function's start offset (from its CFI).
 *
 * For native_deep.py (tests/integration/test_faults_accuracy.py), an
 * exported pyprofd_deep() recurses a given number of frames deep before it
 * churns: a C stack deeper than the frames a native unwinder takes.
 */
#include <stdint.h>

uint64_t pyprofd_spin(long n);
uint64_t pyprofd_deep(long depth, long n);

static __attribute__((noinline)) uint64_t churn(uint64_t x, long n)
{
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x)); /* the loop stays a loop */
    }
    return x;
}

uint64_t pyprofd_spin(long n)
{
    return churn(1, n) + 1; /* not a tail call: pyprofd_spin keeps its frame */
}

__attribute__((noinline)) uint64_t pyprofd_deep(long depth, long n)
{
    volatile uint64_t keep = (uint64_t)depth; /* read after the call: no tail call, a frame each */
    uint64_t r = depth > 0 ? pyprofd_deep(depth - 1, n) : churn(1, n);
    return r + keep;
}
