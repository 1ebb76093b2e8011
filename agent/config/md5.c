/* SPDX-License-Identifier: MIT */
/*
 * md5.c: MD5 as specified by RFC 1321: 64-byte blocks, four rounds of sixteen
 * steps, little-endian words, the message length in bits appended after a
 * 0x80 pad byte.
 */
#include "base/compat.h"

#include "config/md5.h"

/* Per-step left rotations, four per round. */
static const unsigned md5_shift[4][4] = {
    {7, 12, 17, 22},
    {5, 9, 14, 20},
    {4, 11, 16, 23},
    {6, 10, 15, 21},
};

/* T[i] = floor(2^32 * |sin(i + 1)|), from RFC 1321 section 3.4. */
static const uint32_t md5_t[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static uint32_t md5_rol(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static void md5_block(struct md5 *m, const unsigned char *p)
{
    uint32_t x[16];
    for (size_t i = 0; i < 16; i++)
        x[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = m->state[0], b = m->state[1], c = m->state[2], d = m->state[3];
    for (unsigned i = 0; i < 64; i++) {
        uint32_t f;
        unsigned k;
        unsigned round = i / 16;
        switch (round) {
        case 0:
            f = (b & c) | (~b & d);
            k = i;
            break;
        case 1:
            f = (b & d) | (c & ~d);
            k = (5 * i + 1) % 16;
            break;
        case 2:
            f = b ^ c ^ d;
            k = (3 * i + 5) % 16;
            break;
        default:
            f = c ^ (b | ~d);
            k = (7 * i) % 16;
            break;
        }
        uint32_t t = d;
        d = c;
        c = b;
        b = b + md5_rol(a + f + md5_t[i] + x[k], md5_shift[round][i % 4]);
        a = t;
    }
    m->state[0] += a;
    m->state[1] += b;
    m->state[2] += c;
    m->state[3] += d;
}

void md5_init(struct md5 *m)
{
    memset(m, 0, sizeof(*m));
    m->state[0] = 0x67452301;
    m->state[1] = 0xefcdab89;
    m->state[2] = 0x98badcfe;
    m->state[3] = 0x10325476;
}

void md5_update(struct md5 *m, const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t have = (size_t)(m->nbytes % 64);
    m->nbytes += len;
    if (have) {
        size_t take = 64 - have < len ? 64 - have : len;
        memcpy(m->block + have, p, take);
        p += take;
        len -= take;
        if (have + take < 64)
            return;
        md5_block(m, m->block);
    }
    for (; len >= 64; p += 64, len -= 64)
        md5_block(m, p);
    if (len)
        memcpy(m->block, p, len);
}

void md5_final(struct md5 *m, unsigned char out[MD5_DIGEST_LEN])
{
    static const unsigned char pad[64] = {0x80};
    uint64_t bits = m->nbytes * 8;
    size_t have = (size_t)(m->nbytes % 64);
    size_t padlen = have < 56 ? 56 - have : 120 - have;
    unsigned char len_le[8];
    for (size_t i = 0; i < 8; i++)
        len_le[i] = (unsigned char)(bits >> (8 * i));
    md5_update(m, pad, padlen);
    md5_update(m, len_le, 8);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(m->state[i] >> (8 * j));
}

void md5_sum(const void *data, size_t len, unsigned char out[MD5_DIGEST_LEN])
{
    struct md5 m;
    md5_init(&m);
    md5_update(&m, data, len);
    md5_final(&m, out);
}
