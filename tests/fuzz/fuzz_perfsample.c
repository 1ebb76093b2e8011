/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: one perf sample record (agent/perf/perfsample.c): the
 * kernel writes the ring, but a record describes another process, and its
 * stack copy is that process's memory. A parsed record lies inside the
 * input, its stack copy too.
 */
#include "base/compat.h"

#include "perf/perfsample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct perfsample_record r;
    int err = perfsample_parse(data, size, &r);
    PYPROFD_ASSERT(err == 0 || err == -EINVAL || err == -ENOMSG);
    if (err == 0) {
        PYPROFD_ASSERT(r.stack_len <= PERFSAMPLE_STACK_MAX);
        PYPROFD_ASSERT(r.stack_len == 0 ||
                       (r.stack >= data && r.stack + r.stack_len <= data + size));
        uint64_t sum = 0;
        for (size_t i = 0; i < r.stack_len; i++)
            sum += r.stack[i]; /* every byte is readable */
        (void)sum;
    }
    return 0;
}
