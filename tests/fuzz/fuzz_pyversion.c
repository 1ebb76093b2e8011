/* SPDX-License-Identifier: MIT */
/* Fuzz target: the _Py_DebugOffsets header (agent/python/pyversion.c). */
#include "base/compat.h"

#include "python/pyversion.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct py_version v;
    if (pyversion_decode(data, size, &v) == 0) {
        char name[32], why[160];
        (void)pyversion_format(&v, name, sizeof(name));
        int err = pyversion_check_supported(&v, why, sizeof(why));
        PYPROFD_ASSERT(err == 0 || err == -ENOTSUP);
        PYPROFD_ASSERT(memchr(why, '\0', sizeof(why)) != NULL);
        PYPROFD_ASSERT((err == 0) == (why[0] == '\0'));
    }
    return 0;
}
