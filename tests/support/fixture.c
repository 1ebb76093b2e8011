/* SPDX-License-Identifier: MIT */
/*
 * fixture.c: fixture file loading (see fixture.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "fixture.h"

const char *fixture_path(const char *rel, char *buf, size_t len)
{
    const char *src = getenv("PYPROFD_SOURCE_DIR");
#ifdef PYPROFD_SOURCE_DIR
    if (!src)
        src = PYPROFD_SOURCE_DIR;
#endif
    snprintf(buf, len, "%s/tests/fixtures/%s", src ? src : ".", rel);
    return buf;
}

uint8_t *fixture_load(const char *rel, size_t *len)
{
    char path[4096];
    FILE *f = fopen(fixture_path(rel, path, sizeof(path)), "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = alloc_malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        uint8_t *nb = alloc_realloc(buf, cap * 2);
        if (!nb) {
            alloc_free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}
