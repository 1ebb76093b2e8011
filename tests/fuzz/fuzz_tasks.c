/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: agent/sampler/tasks.c's reading of the kernel's directory
 * records (getdents64) of /proc/PID/task into thread ids.
 */
#include "base/compat.h"

#include "sampler/tasks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pid_t tids[16];
    size_t n = 0;
    bool more = false;
    (void)tasks_parse(data, size, tids, PYPROFD_ARRAY_SIZE(tids), &n, &more);
    PYPROFD_ASSERT(n <= PYPROFD_ARRAY_SIZE(tids));
    PYPROFD_ASSERT(!more || n == PYPROFD_ARRAY_SIZE(tids));
    for (size_t i = 0; i < n; i++)
        PYPROFD_ASSERT(tids[i] > 0);
    return 0;
}
