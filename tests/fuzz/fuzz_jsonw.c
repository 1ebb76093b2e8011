/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the JSON writer (agent/base/jsonw.c) fed strings and nesting
 * from the input, as the target's names reach it.
 *
 * Input: byte 0 the writer's flags (bit 0 pretty, bit 1 terminal, bit 2 not
 * HTML) and, in bits 4-7, a buffer cap (0: roomy; else 16 bytes a step);
 * then operations, one byte each (its low 7 bits mod 10): open an object, open
 * an array, end, a string (a length byte, the bytes; the op's bit 7 asks
 * for control pictures), an int, a uint (8 bytes), a double, a fixed (8
 * bytes and a digits byte), a bool, null. Inside an object each value has
 * a key (a length byte, the bytes). Nesting stops at 60 (base/jsonscan's
 * bound); whatever is open at the end is closed.
 *
 * The same operations go to a buffer, a stdio stream and a counting writer.
 * Checked: a roomy writer succeeds, the three agree byte for byte; the
 * document is exactly one value to base/jsonscan.c (strict RFC 8259, valid
 * UTF-8), whose tokens are the operations: each key and string decodes to
 * its bytes as utf8_sanitize() makes them valid (control pictures: no
 * control character but tab), each integer to its digits, a non-finite
 * double to null. No '<' unless not HTML, no C1 control with terminal, no
 * control byte outside the layout's newlines. A small cap: -E2BIG, and the
 * buffer holds no more than the cap.
 */
#include "base/compat.h"

#include "base/buf.h"
#include "base/jsonscan.h"
#include "base/jsonw.h"
#include "base/utf8.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DEPTH     60u
#define FUZZ_ROOMY     (8u << 20)
#define FUZZ_TOKENS    8192u
#define FUZZ_MAX_INPUT (32u << 10) /* its output fits FUZZ_ROOMY, pretty at depth 60 */

/* What the scanner should see, in order. */
struct fuzz_tok {
    enum jsonscan_tok type;
    const uint8_t *s; /* KEY, STRING: the bytes given */
    size_t n;
    bool pictures;
    char num[32]; /* NUMBER: the text, "" for a double (not compared) */
};

struct fuzz {
    const uint8_t *p, *end;
    struct jsonw *w[3]; /* buffer, stream, count */
    struct fuzz_tok tok[FUZZ_TOKENS];
    size_t ntok, at;
    bool is_array[FUZZ_DEPTH];
    unsigned depth;
    bool done;
};

static char fuzz_stream[FUZZ_ROOMY + 1];

static bool fuzz_take(struct fuzz *f, size_t n, const uint8_t **out)
{
    if ((size_t)(f->end - f->p) < n)
        return false;
    *out = f->p;
    f->p += n;
    return true;
}

static struct fuzz_tok *fuzz_expect(struct fuzz *f, enum jsonscan_tok type)
{
    PYPROFD_ASSERT(f->ntok < FUZZ_TOKENS);
    struct fuzz_tok *t = &f->tok[f->ntok++];
    *t = (struct fuzz_tok){.type = type};
    return t;
}

/* The key of the next value (NULL in an array or at the top), from the input. */
static const char *fuzz_key(struct fuzz *f, char *key, size_t cap)
{
    if (f->depth == 0 || f->is_array[f->depth - 1])
        return NULL;
    const uint8_t *len = NULL, *s = NULL;
    size_t n = fuzz_take(f, 1, &len) ? *len % 64 : 0;
    if (!fuzz_take(f, n, &s))
        n = 0;
    PYPROFD_ASSERT(n < cap);
    if (n)
        memcpy(key, s, n);
    key[n] = '\0';
    n = strnlen(key, n); /* a key is a C string */
    struct fuzz_tok *t = fuzz_expect(f, JSONSCAN_KEY);
    t->s = (const uint8_t *)key;
    t->n = n;
    return key;
}

static void fuzz_after(struct fuzz *f)
{
    if (f->depth == 0)
        f->done = true;
}

static void fuzz_open(struct fuzz *f, const char *key, bool array)
{
    for (int i = 0; i < 3; i++)
        (array ? jsonw_array : jsonw_object)(f->w[i], key);
    fuzz_expect(f, array ? JSONSCAN_ARRAY_BEGIN : JSONSCAN_OBJECT_BEGIN);
    f->is_array[f->depth++] = array;
}

static void fuzz_end(struct fuzz *f)
{
    for (int i = 0; i < 3; i++)
        jsonw_end(f->w[i]);
    f->depth--;
    fuzz_expect(f, f->is_array[f->depth] ? JSONSCAN_ARRAY_END : JSONSCAN_OBJECT_END);
    fuzz_after(f);
}

/* One operation from the input; false at its end. Keys live until the scan: @keys. */
static bool fuzz_op(struct fuzz *f, char (*key)[64])
{
    const uint8_t *op = NULL, *b = NULL;
    if (f->done || !fuzz_take(f, 1, &op))
        return false;
    unsigned kind = (*op & 0x7fu) % 10;
    if (kind == 2) {
        if (f->depth)
            fuzz_end(f);
        return true;
    }
    const char *k = fuzz_key(f, *key, sizeof(*key));
    struct fuzz_tok *t;
    uint64_t v = 0;
    switch (kind) {
    case 0:
    case 1:
        if (f->depth < FUZZ_DEPTH) {
            fuzz_open(f, k, kind == 1);
            return true;
        }
        /* too deep for the scanner: a null */
        for (int i = 0; i < 3; i++)
            jsonw_null(f->w[i], k);
        fuzz_expect(f, JSONSCAN_NULL);
        break;
    case 3: {
        const uint8_t *len = NULL;
        size_t n = fuzz_take(f, 1, &len) ? *len : 0;
        if (!fuzz_take(f, n, &b))
            n = 0;
        unsigned flags = *op & 0x80 ? JSONW_STRING_PICTURES : 0;
        for (int i = 0; i < 3; i++)
            jsonw_stringn(f->w[i], k, (const char *)b, n, flags);
        t = fuzz_expect(f, JSONSCAN_STRING);
        t->s = b;
        t->n = n;
        t->pictures = flags;
        break;
    }
    case 4:
    case 5:
        if (fuzz_take(f, 8, &b))
            memcpy(&v, b, 8);
        t = fuzz_expect(f, JSONSCAN_NUMBER);
        if (kind == 4)
            snprintf(t->num, sizeof(t->num), "%" PRId64, (int64_t)v);
        else
            snprintf(t->num, sizeof(t->num), "%" PRIu64, v);
        for (int i = 0; i < 3; i++) {
            if (kind == 4)
                jsonw_int(f->w[i], k, (int64_t)v);
            else
                jsonw_uint(f->w[i], k, v);
        }
        break;
    case 6:
    case 7: {
        double d = 0;
        const uint8_t *digits = NULL;
        if (fuzz_take(f, 8, &b))
            memcpy(&d, b, 8);
        int nd = fuzz_take(f, 1, &digits) ? *digits % 20 : 6;
        for (int i = 0; i < 3; i++) {
            if (kind == 6)
                jsonw_double(f->w[i], k, d, nd);
            else
                jsonw_fixed(f->w[i], k, d, nd);
        }
        fuzz_expect(f, isfinite(d) ? JSONSCAN_NUMBER : JSONSCAN_NULL);
        break;
    }
    case 8:
        for (int i = 0; i < 3; i++)
            jsonw_bool(f->w[i], k, *op & 0x80);
        fuzz_expect(f, *op & 0x80 ? JSONSCAN_TRUE : JSONSCAN_FALSE);
        break;
    default:
        for (int i = 0; i < 3; i++)
            jsonw_null(f->w[i], k);
        fuzz_expect(f, JSONSCAN_NULL);
        break;
    }
    fuzz_after(f);
    return true;
}

/* Each token as the operations said. */
static int fuzz_check(void *arg, const struct jsonscan_token *tok)
{
    struct fuzz *f = arg;
    if (tok->type == JSONSCAN_END)
        return 0;
    PYPROFD_ASSERT(f->at < f->ntok);
    const struct fuzz_tok *t = &f->tok[f->at++];
    PYPROFD_ASSERT(tok->type == t->type);
    PYPROFD_ASSERT(!(tok->flags & JSONSCAN_CUT));
    if (t->type == JSONSCAN_NUMBER && t->num[0]) {
        PYPROFD_ASSERT(strcmp(tok->text, t->num) == 0);
    } else if ((t->type == JSONSCAN_KEY || t->type == JSONSCAN_STRING) && !t->pictures) {
        static char want[3 * 256 + 1];
        size_t n = utf8_sanitize(want, sizeof(want), (const char *)t->s, t->n);
        PYPROFD_ASSERT(tok->len == n && memcmp(tok->text, want, n) == 0);
    } else if (t->type == JSONSCAN_STRING) {
        for (size_t i = 0; i < tok->len; i++) {
            unsigned char c = (unsigned char)tok->text[i];
            PYPROFD_ASSERT((c >= 0x20 || c == '\t') && c != 0x7f);
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz f;
    static char keys[FUZZ_TOKENS][64];
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    unsigned flags = data[0] & 7u;
    size_t cap = data[0] >> 4 ? 16u * (data[0] >> 4) : FUZZ_ROOMY;
    struct buf b;
    struct jsonw wb, ws, wc;
    buf_init(&b, cap);
    FILE *stream = fmemopen(fuzz_stream, sizeof(fuzz_stream), "w");
    PYPROFD_ASSERT(stream);
    jsonw_init_buf(&wb, &b, flags);
    jsonw_init_file(&ws, stream, flags);
    jsonw_init_count(&wc, flags);
    f = (struct fuzz){.p = data + 1, .end = data + size, .w = {&wb, &ws, &wc}};
    /* room for each op's key and value, and for closing what is open */
    for (size_t i = 0; f.ntok + FUZZ_DEPTH + 3 < FUZZ_TOKENS && fuzz_op(&f, &keys[i]); i++)
        ;
    while (f.depth)
        fuzz_end(&f);
    if (!f.done) {
        for (int i = 0; i < 3; i++)
            jsonw_null(f.w[i], NULL);
        fuzz_expect(&f, JSONSCAN_NULL);
    }
    int eb = jsonw_finish(&wb), es = jsonw_finish(&ws), ec = jsonw_finish(&wc);
    long slen = ftell(stream);
    PYPROFD_ASSERT(fclose(stream) == 0);
    PYPROFD_ASSERT(es == 0 && ec == 0);
    PYPROFD_ASSERT(slen >= 0 && (uint64_t)slen == jsonw_bytes(&wc));
    if (cap != FUZZ_ROOMY) {
        PYPROFD_ASSERT(eb == 0 || eb == -E2BIG);
        PYPROFD_ASSERT(buf_len(&b) <= cap);
    }
    if (eb == 0) {
        const char *out = buf_str(&b);
        size_t n = buf_len(&b);
        PYPROFD_ASSERT(n == (size_t)slen && memcmp(out, fuzz_stream, n) == 0);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)out[i];
            PYPROFD_ASSERT(c >= 0x20 || (c == '\n' && (flags & JSONW_PRETTY)));
            PYPROFD_ASSERT(c != 0x7f);
            PYPROFD_ASSERT(c != '<' || (flags & JSONW_NOT_HTML));
            PYPROFD_ASSERT(!(flags & JSONW_TERMINAL) || c != 0xc2 || i + 1 == n ||
                           (unsigned char)out[i + 1] > 0x9f);
        }
        struct jsonscan *sc = NULL;
        PYPROFD_ASSERT(jsonscan_new(JSONSCAN_MAX_DEPTH, 4096, 0, &sc) == 0);
        PYPROFD_ASSERT(jsonscan_feed(sc, out, n, fuzz_check, &f) == 0);
        PYPROFD_ASSERT(jsonscan_finish(sc, fuzz_check, &f) == 0);
        PYPROFD_ASSERT(f.at == f.ntok);
        jsonscan_free(sc);
    }
    buf_release(&b);
    return 0;
}
