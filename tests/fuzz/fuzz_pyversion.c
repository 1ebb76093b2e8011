/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the _Py_DebugOffsets header, and the search for PY_VERSION in
 * a binary's read-only data (3.9, 3.10), both in agent/python/pyversion.c.
 */
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
    /* a version found lies inside the input, is "3.N.M" with a NUL after it */
    int at = pyversion_scan(data, size, 0, &v);
    PYPROFD_ASSERT(at == -ENOENT || (at >= 0 && (size_t)at + 6 <= size));
    if (at >= 0) {
        char name[32];
        PYPROFD_ASSERT(data[at] == '3' && data[at + 1] == '.' && v.major == 3);
        PYPROFD_ASSERT(memchr(data + at, '\0', size - (size_t)at) != NULL);
        (void)pyversion_format(&v, name, sizeof(name));
        PYPROFD_ASSERT(strncmp(name, (const char *)data + at, strlen(name)) == 0);
        PYPROFD_ASSERT(pyversion_scan(data, size, v.minor, &v) == at);
    }
    return 0;
}
