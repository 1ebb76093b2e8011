/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: agent/base/jsonscan.c, checked three ways on every input:
 *  - against json-c's strict tokener: whatever the scanner accepts as one
 *    value, json-c accepts too. (Not the other way round: json-c is laxer
 *    than RFC 8259 and Unicode — it takes "00", "-01" and "1.", raw control
 *    characters inside strings, overlong UTF-8, encoded surrogates and
 *    values past U+10FFFF — all of which the scanner refuses, as its unit
 *    test checks case by case.) Nesting past the scanner's bound aside;
 *  - the same tokens however the input is split (two cut points taken from
 *    the input), and the same tokens in sequence mode for a single value;
 *  - texts are valid UTF-8, never longer than the cap, cut only when marked;
 *  - skipping every container (jsonscan_skip()) accepts and refuses exactly
 *    the same inputs.
 */
#include "base/compat.h"

#include <json-c/json_tokener.h>

#include "base/jsonscan.h"
#include "base/utf8.h"

#define FUZZ_DEPTH 32u
#define FUZZ_CAP   24u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_trace {
    uint64_t hash;
    size_t tokens;
    struct jsonscan *skip; /* not NULL: skip every container it begins */
};

static int fuzz_token(void *arg, const struct jsonscan_token *t)
{
    struct fuzz_trace *tr = arg;
    PYPROFD_ASSERT(t->len <= FUZZ_CAP);
    PYPROFD_ASSERT(t->full_len >= t->len);
    PYPROFD_ASSERT(!!(t->flags & JSONSCAN_CUT) == (t->full_len > t->len));
    PYPROFD_ASSERT(t->text[t->len] == '\0');
    if (t->type == JSONSCAN_KEY || t->type == JSONSCAN_STRING) {
        /* valid UTF-8 once the U+0000 the string may hold is set aside */
        for (size_t i = 0; i < t->len;) {
            size_t n = utf8_seq_len((const unsigned char *)t->text + i, t->len - i, NULL);
            PYPROFD_ASSERT(n > 0);
            i += n;
        }
    }
    PYPROFD_ASSERT(t->depth <= FUZZ_DEPTH);
    uint64_t h = tr->hash ^ ((uint64_t)t->type << 56 | (uint64_t)t->depth << 48 | t->full_len);
    for (size_t i = 0; i < t->len; i++)
        h = (h ^ (unsigned char)t->text[i]) * 0x100000001b3ull;
    tr->hash = h * 0x9E3779B97F4A7C15ull;
    tr->tokens++;
    if (tr->skip && (t->type == JSONSCAN_OBJECT_BEGIN || t->type == JSONSCAN_ARRAY_BEGIN))
        jsonscan_skip(tr->skip);
    return 0;
}

/* Scans @a data cut at @a a and @a b (a <= b <= size). */
static int fuzz_scan(struct jsonscan *s, const uint8_t *data, size_t size, size_t a, size_t b,
                     struct fuzz_trace *tr)
{
    jsonscan_reset(s);
    memset(tr, 0, sizeof(*tr));
    int rc = jsonscan_feed(s, data, a, fuzz_token, tr);
    if (rc == 0)
        rc = jsonscan_feed(s, data + a, b - a, fuzz_token, tr);
    if (rc == 0)
        rc = jsonscan_feed(s, data + b, size - b, fuzz_token, tr);
    if (rc == 0)
        rc = jsonscan_finish(s, fuzz_token, tr);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 16))
        return 0;
    struct jsonscan *one = NULL, *many = NULL;
    if (jsonscan_new(FUZZ_DEPTH, FUZZ_CAP, 0, &one) != 0 ||
        jsonscan_new(FUZZ_DEPTH, FUZZ_CAP, JSONSCAN_MULTI, &many) != 0)
        goto out;
    struct fuzz_trace whole, split;
    int rc = fuzz_scan(one, data, size, size, size, &whole);
    size_t a = size ? data[0] % (size + 1) : 0;
    size_t b = size ? a + data[size - 1] % (size - a + 1) : 0;
    int rc2 = fuzz_scan(one, data, size, a, b, &split);
    PYPROFD_ASSERT(rc == rc2);
    if (rc == 0) {
        PYPROFD_ASSERT(whole.hash == split.hash && whole.tokens == split.tokens);
        /* a single value scans the same in sequence mode */
        struct fuzz_trace seq;
        PYPROFD_ASSERT(fuzz_scan(many, data, size, a, size, &seq) == 0);
        PYPROFD_ASSERT(seq.hash == whole.hash && seq.tokens == whole.tokens);
    }
    /* skipping changes what is handed over, never the verdict */
    struct fuzz_trace skipped;
    jsonscan_reset(one);
    memset(&skipped, 0, sizeof(skipped));
    skipped.skip = one;
    int rc3 = jsonscan_feed(one, data, size, fuzz_token, &skipped);
    if (rc3 == 0)
        rc3 = jsonscan_finish(one, fuzz_token, &skipped);
    PYPROFD_ASSERT(rc3 == rc);
    if (rc == -ELOOP)
        goto out;
    /* json-c, strict, as one value with nothing after it */
    struct json_tokener *tok = json_tokener_new_ex(4 * FUZZ_DEPTH);
    if (!tok)
        goto out;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    struct json_object *o =
        size <= INT32_MAX ? json_tokener_parse_ex(tok, (const char *)data, (int)size) : NULL;
    enum json_tokener_error e = json_tokener_get_error(tok);
    /* (json-c's null is a NULL object: success is the error code's) */
    bool jc_ok = e == json_tokener_success;
    if (jc_ok && json_tokener_get_parse_end(tok) < size) {
        /* only whitespace may follow */
        for (size_t i = json_tokener_get_parse_end(tok); i < size; i++)
            if (!(data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
                jc_ok = false;
    } else if (!jc_ok && e == json_tokener_continue) {
        /* a top-level number or literal waits for more: the end of the input ends it */
        struct json_object *o2 = json_tokener_parse_ex(tok, "", 1);
        jc_ok = json_tokener_get_error(tok) == json_tokener_success;
        json_object_put(o2);
    }
    json_object_put(o);
    json_tokener_free(tok);
    if (rc == 0 && !jc_ok) {
        fprintf(stderr, "jsonscan accepts, json-c refuses %zu bytes\n", size);
        PYPROFD_ASSERT(jc_ok);
    }
out:
    jsonscan_free(one);
    jsonscan_free(many);
    return 0;
}
