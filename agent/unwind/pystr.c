/* SPDX-License-Identifier: MIT */
/*
 * pystr.c: str/bytes decoding (see pystr.h).
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "base/utf8.h"
#include "unwind/pystr.h"

static size_t pystr_put_utf8(char *out, size_t cap, size_t at, uint32_t cp)
{
    unsigned char b[UTF8_MAX_SEQ];
    size_t n = utf8_encode(cp, b); /* a lone surrogate or beyond U+10FFFF: U+FFFD */
    if (at + n + 1 > cap)
        return 0; /* no room: stop on a character boundary */
    memcpy(out + at, b, n);
    return n;
}

long pystr_decode(const struct py_layout *l, const uint8_t *obj, size_t len, char *out,
                  size_t out_cap, size_t *need)
{
    return pystr_decode_n(l, obj, len, out, out_cap, PYSTR_MAX_CHARS, need);
}

long pystr_decode_n(const struct py_layout *l, const uint8_t *obj, size_t len, char *out,
                    size_t out_cap, size_t max_chars, size_t *need)
{
    if (max_chars > PYSTR_MAX_CHARS)
        max_chars = PYSTR_MAX_CHARS;
    if (out_cap == 0)
        return -EINVAL;
    out[0] = '\0';
    /* an ASCII object is shorter than str_size (the legacy object's size) */
    size_t header = l->str_state + 4 > l->str_length + 8 ? l->str_state + 4 : l->str_length + 8;
    if (len < header) {
        *need = header;
        return -EAGAIN;
    }
    int64_t nchars = (int64_t)load_le64(obj + l->str_length);
    uint32_t state = load_le32(obj + l->str_state);
    if (nchars < 0)
        return -EINVAL;
    if (!PYABI_STR_COMPACT(state, l->str_state_shift))
        return -ENOTSUP;
    unsigned kind =
        PYABI_STR_ASCII(state, l->str_state_shift) ? 1 : PYABI_STR_KIND(state, l->str_state_shift);
    if (kind != 1 && kind != 2 && kind != 4)
        return -EINVAL;
    size_t data =
        PYABI_STR_ASCII(state, l->str_state_shift) ? l->str_ascii_data : l->str_compact_data;
    size_t keep = (uint64_t)nchars > max_chars ? max_chars : (size_t)nchars;
    if (data + keep * kind > len) {
        *need = data + keep * kind;
        return -EAGAIN;
    }
    const uint8_t *p = obj + data;
    size_t at = 0;
    uint64_t replaced = 0;
    for (size_t i = 0; i < keep; i++) {
        uint32_t cp;
        if (kind == 1) {
            cp = p[i];
        } else if (kind == 2) {
            cp = load_le16(p + 2 * i);
        } else {
            cp = load_le32(p + 4 * i);
        }
        /*
         * Not a character UTF-8 can hold (a lone surrogate: how Python keeps
         * an undecodable byte of a file name), or a byte an "ASCII" string
         * should not have: U+FFFD, counted as base/utf8.h's replacements.
         */
        bool bad = (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
                   (kind == 1 && cp >= 0x80 && PYABI_STR_ASCII(state, l->str_state_shift));
        size_t n = pystr_put_utf8(out, out_cap, at, bad ? UTF8_REPLACEMENT : cp);
        if (n == 0)
            break;
        at += n;
        replaced += bad;
    }
    out[at] = '\0';
    if (replaced)
        utf8_count_replaced(replaced);
    return (long)at;
}

long pystr_read(struct memread *mr, const struct py_layout *l, uint64_t raddr, char *out,
                size_t out_cap)
{
    return pystr_read_n(mr, l, raddr, out, out_cap, PYSTR_MAX_CHARS);
}

long pystr_read_n(struct memread *mr, const struct py_layout *l, uint64_t raddr, char *out,
                  size_t out_cap, size_t max_chars)
{
    uint8_t buf[PYABI_MAX_STRHDR + 4 * PYSTR_MAX_CHARS];
    size_t want = l->str_size + PYSTR_SPECULATIVE_DATA;
    /* A speculative read may run off the end of a mapping; then read exactly. */
    int err = memread_read(mr, raddr, buf, want);
    if (err == -EFAULT) {
        want = l->str_ascii_data; /* the header alone */
        err = memread_read(mr, raddr, buf, want);
    }
    if (err)
        return err;
    size_t need = 0;
    long n = pystr_decode_n(l, buf, want, out, out_cap, max_chars, &need);
    if (n != -EAGAIN)
        return n;
    if (need > sizeof(buf) || need <= want)
        return -EINVAL;
    err = memread_read(mr, raddr, buf, need);
    if (err)
        return err;
    return pystr_decode_n(l, buf, need, out, out_cap, max_chars, &need);
}

long pybytes_read(struct memread *mr, const struct py_layout *l, uint64_t raddr, uint8_t *out,
                  size_t cap)
{
    int64_t size;
    int err = memread_read(mr, raddr + l->bytes_ob_size, &size, sizeof(size));
    if (err)
        return err;
    if (size < 0)
        return -EINVAL;
    if ((uint64_t)size > cap)
        return -E2BIG;
    err = memread_read(mr, raddr + l->bytes_ob_sval, out, (size_t)size);
    return err ? err : (long)size;
}
