/* SPDX-License-Identifier: MIT */
/*
 * pyversion.c: decoding and support decision for the _Py_DebugOffsets header
 * (see pyversion.h).
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "python/pyversion.h"

bool pyversion_minor_supported(unsigned minor)
{
    return minor >= PYVERSION_MIN_MINOR && minor <= PYVERSION_MAX_MINOR;
}

bool pyversion_minor_by_string(unsigned minor)
{
    return pyversion_minor_supported(minor) && minor < PYVERSION_SYMBOL_MINOR;
}

int pyversion_decode(const void *header, size_t len, struct py_version *out)
{
    const unsigned char *h = header;
    if (len < PYVERSION_HEADER_SIZE)
        return -EAGAIN;
    if (memcmp(h, PYVERSION_COOKIE, PYVERSION_COOKIE_LEN) != 0)
        return -ENOENT;
    return pyversion_from_hex(load_le64(h + 8), load_le64(h + 16), out);
}

int pyversion_from_hex(uint64_t hex, uint64_t ft, struct py_version *out)
{
    struct py_version v = {
        .hex = hex,
        .major = (unsigned)((hex >> 24) & 0xff),
        .minor = (unsigned)((hex >> 16) & 0xff),
        .micro = (unsigned)((hex >> 8) & 0xff),
        .level = (unsigned)((hex >> 4) & 0xf),
        .serial = (unsigned)(hex & 0xf),
        .free_threaded = ft == 1,
    };
    if ((hex >> 32) != 0 || v.major != 3 || ft > 1)
        return -EPROTO;
    if (v.level != PY_RELEASE_ALPHA && v.level != PY_RELEASE_BETA &&
        v.level != PY_RELEASE_CANDIDATE && v.level != PY_RELEASE_FINAL)
        return -EPROTO;
    *out = v;
    return 0;
}

const char *pyversion_format(const struct py_version *v, char *buf, size_t len)
{
    static const char levels[] = {'a', 'b', 'c'}; /* alpha, beta, candidate: 3.15.0rc1 */
    char pre[8] = "";
    if (v->level == PY_RELEASE_CANDIDATE)
        snprintf(pre, sizeof(pre), "rc%u", v->serial);
    else if (v->level >= PY_RELEASE_ALPHA && v->level < PY_RELEASE_CANDIDATE)
        snprintf(pre, sizeof(pre), "%c%u", levels[v->level - PY_RELEASE_ALPHA], v->serial);
    if (v->micro_unknown)
        snprintf(buf, len, "%u.%u%s", v->major, v->minor, v->free_threaded ? "t" : "");
    else
        snprintf(buf, len, "%u.%u.%u%s%s", v->major, v->minor, v->micro, pre,
                 v->free_threaded ? "t" : "");
    return buf;
}

/* A decimal number of 1 to 3 digits at @p (at most @end); its length, or 0. */
static size_t pyversion_number(const char *p, const char *end, unsigned *out)
{
    size_t n = 0;
    unsigned v = 0;
    while (p + n < end && n < 4 && p[n] >= '0' && p[n] <= '9')
        v = v * 10 + (unsigned)(p[n++] - '0');
    if (n == 0 || n > 3 || (n > 1 && p[0] == '0'))
        return 0;
    *out = v;
    return n;
}

int pyversion_scan(const void *buf, size_t len, unsigned minor, struct py_version *out)
{
    const char *s = buf, *end = s + len;
    for (const char *p = s; p + 6 <= end; p++) {
        /* the end of a string: no digit or dot before it (the linker may
         * keep PY_VERSION as the tail of a longer string, such as the
         * installation's prefix), a NUL after */
        if (p[0] != '3' || p[1] != '.' ||
            (p > s && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')))
            continue;
        unsigned mi = 0, mc = 0;
        size_t a = pyversion_number(p + 2, end, &mi);
        if (!a || p + 2 + a >= end || p[2 + a] != '.')
            continue;
        size_t b = pyversion_number(p + 3 + a, end, &mc);
        const char *q = p + 3 + a + b;
        if (!b || q >= end || *q != '\0' || (minor && mi != minor) || mi > 255 || mc > 255)
            continue;
        *out = (struct py_version){
            .hex = (3u << 24) | (mi << 16) | (mc << 8) | (PY_RELEASE_FINAL << 4),
            .major = 3,
            .minor = mi,
            .micro = mc,
            .level = PY_RELEASE_FINAL,
        };
        return (int)(p - s);
    }
    return -ENOENT;
}

int pyversion_check_supported(const struct py_version *v, char *why, size_t why_len)
{
    char name[32];
    pyversion_format(v, name, sizeof(name));
    if (v->major != 3 || !pyversion_minor_supported(v->minor)) {
        snprintf(why, why_len, "CPython %s is not supported %s(supported: " PYVERSION_SUPPORTED ")",
                 name, v->major == 3 && v->minor < PYVERSION_MIN_MINOR ? "" : "yet ");
        return -ENOTSUP;
    }
    if (v->level != PY_RELEASE_FINAL) {
        snprintf(why, why_len,
                 "CPython %s is a pre-release; only final releases are supported "
                 "(pre-release table layouts change)",
                 name);
        return -ENOTSUP;
    }
    if (why_len)
        why[0] = '\0';
    return 0;
}
