/* SPDX-License-Identifier: MIT */
/*
 * pyversion.c: decoding and support decision for the _Py_DebugOffsets header
 * (see pyversion.h).
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "python/pyversion.h"

/* The minor versions whose table layouts pyprofd ships (python/debug_offsets_3_*.c). */
/* The minor versions pyprofd reads: 3.11 and 3.12 from generated layouts
 * (python/layouts_generated.c), 3.13+ from their own tables
 * (python/debug_offsets_3_*.c). */
static const unsigned pyversion_supported_minors[] = {11, 12, 13, 14, 15};

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
    snprintf(buf, len, "%u.%u.%u%s%s", v->major, v->minor, v->micro, pre,
             v->free_threaded ? "t" : "");
    return buf;
}

int pyversion_check_supported(const struct py_version *v, char *why, size_t why_len)
{
    char name[32];
    pyversion_format(v, name, sizeof(name));
    bool known = false;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(pyversion_supported_minors); i++)
        known |= v->major == 3 && v->minor == pyversion_supported_minors[i];
    if (!known) {
        snprintf(why, why_len, "CPython %s is not supported yet (supported: 3.11 to 3.15)", name);
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
