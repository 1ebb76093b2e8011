/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the line tables of CPython 3.9 (co_lnotab) and 3.10
 * (co_linetable), agent/unwind/linetable.c.
 *
 * Input: byte 0 selects the format (even: 3.9, odd: 3.10), bytes 1-4 are
 * co_firstlineno (int32, little-endian), bytes 5-8 the byte offset looked up
 * (uint32, little-endian), the rest is the table. A shorter input is
 * zero-padded. The seeds in seeds/oldlines/ are real 3.9 and 3.10 tables of
 * tests/fixtures/linetable/3.9.txt and 3.10.txt (make_seeds.py).
 *
 * Besides the sanitizers it checks what a lookup may return: 0 with only a
 * line (no end line, no columns), -EINVAL for an odd length or a line out of
 * range, and for 3.10 -ENOENT exactly when the offset is past the ranges.
 */
#include "base/compat.h"

#include "unwind/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t head[9] = {0};
    memcpy(head, data, size < 9 ? size : 9);
    uint32_t first_u = (uint32_t)head[1] | (uint32_t)head[2] << 8 | (uint32_t)head[3] << 16 |
                       (uint32_t)head[4] << 24;
    int32_t first;
    memcpy(&first, &first_u, sizeof(first));
    uint32_t addr = (uint32_t)head[5] | (uint32_t)head[6] << 8 | (uint32_t)head[7] << 16 |
                    (uint32_t)head[8] << 24;
    const uint8_t *table = size > 9 ? data + 9 : NULL;
    size_t len = size > 9 ? size - 9 : 0;
    struct linetable_pos p = {0};
    uint64_t span = 0;
    for (size_t i = 0; i + 1 < len; i += 2)
        span += table[i];
    int err = (head[0] & 1) ? linetable_lookup_3_10(table, len, first, addr, &p)
                            : linetable_lookup_lnotab(table, len, first, addr, &p);
    if (len % 2)
        PYPROFD_ASSERT(err == -EINVAL);
    PYPROFD_ASSERT(err == 0 || err == -EINVAL || err == -ENOENT);
    if (!(head[0] & 1))
        PYPROFD_ASSERT(err != -ENOENT); /* co_lnotab: past the end is the last line */
    else if (err != -EINVAL)
        PYPROFD_ASSERT((err == -ENOENT) == (addr >= span));
    if (err == 0)
        PYPROFD_ASSERT(p.end_line == LINETABLE_UNKNOWN && p.col == LINETABLE_UNKNOWN &&
                       p.end_col == LINETABLE_UNKNOWN);
    return 0;
}
