/* SPDX-License-Identifier: MIT */
/*
 * buf.c: the bounded growable byte buffer (see buf.h).
 */
#include "base/compat.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/alloc.h"
#include "base/buf.h"

#define BUF_MAGIC 0x62756621u /* "buf!" */
#define BUF_FIRST 64u         /* first allocation */

void buf_init(struct buf *b, size_t max)
{
    *b = (struct buf){.max = max, .magic = BUF_MAGIC};
}

void buf_release(struct buf *b)
{
    if (!b->magic)
        return; /* zeroed: never initialised */
    PYPROFD_ASSERT(b->magic == BUF_MAGIC);
    alloc_free(b->data);
    size_t max = b->max;
    buf_init(b, max);
}

void buf_reset(struct buf *b)
{
    PYPROFD_ASSERT(b->magic == BUF_MAGIC);
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Makes room for @n more bytes (and the NUL). */
static int buf_grow(struct buf *b, size_t n)
{
    PYPROFD_ASSERT(b->magic == BUF_MAGIC);
    if (n > b->max - b->len)
        return -E2BIG;
    size_t want = b->len + n + 1;
    if (want <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : BUF_FIRST;
    while (cap < want)
        cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    if (b->max < SIZE_MAX && cap > b->max + 1)
        cap = b->max + 1; /* never allocate past what the cap can use */
    char *p = alloc_realloc(b->data, cap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_add(struct buf *b, const void *p, size_t n)
{
    int err = buf_grow(b, n);
    if (err)
        return err;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_adds(struct buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

int buf_addc(struct buf *b, char c)
{
    return buf_add(b, &c, 1);
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return -EINVAL;
    if ((size_t)n < sizeof(small))
        return buf_add(b, small, (size_t)n);
    int err = buf_grow(b, (size_t)n);
    if (err)
        return err;
    va_start(ap, fmt);
    (void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

const char *buf_str(const struct buf *b)
{
    return b->data ? b->data : "";
}

size_t buf_len(const struct buf *b)
{
    return b->len;
}

char *buf_take(struct buf *b, size_t *len)
{
    PYPROFD_ASSERT(b->magic == BUF_MAGIC);
    char *p = b->data;
    size_t n = b->len;
    if (!p) {
        p = alloc_malloc(1);
        if (!p) {
            errno = ENOMEM;
            return NULL;
        }
        p[0] = '\0';
    }
    if (len)
        *len = n;
    size_t max = b->max;
    buf_init(b, max);
    return p;
}

static ssize_t buf_stream_write(void *cookie, const char *p, size_t n)
{
    struct buf_stream *s = cookie;
    int err = s->err ? s->err : buf_add(s->b, p, n);
    if (err) {
        s->err = err;
        errno = -err;
        return -1;
    }
    return (ssize_t)n;
}

FILE *buf_fopen(struct buf_stream *s)
{
    cookie_io_functions_t io = {.write = buf_stream_write};
    s->err = 0;
    return fopencookie(s, "w", io);
}
