/* SPDX-License-Identifier: MIT */
/*
 * labels.c: label sets as a sorted array of owned (name, value) pairs (see
 * labels.h). Sets are small (tens of labels), so binary search plus memmove
 * beats any hash table and keeps iteration in name order for free.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "base/labels.h"
#include "base/utf8.h"

void labels_init(struct labels *ls)
{
    memset(ls, 0, sizeof(*ls));
}

void labels_release(struct labels *ls)
{
    for (size_t i = 0; i < ls->n; i++) {
        alloc_free(ls->v[i].name);
        alloc_free(ls->v[i].value);
    }
    alloc_free(ls->v);
    labels_init(ls);
}

/* Index of @name, or of where it would be inserted (*found false). */
static size_t labels_find(const struct labels *ls, const char *name, bool *found)
{
    size_t lo = 0, hi = ls->n;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ls->v[mid].name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A copy of the first @len bytes of @value (up to a NUL) as valid UTF-8 (labels.h). */
static char *labels_value_dup(const char *value, size_t len)
{
    len = strnlen(value, len);
    size_t need = utf8_sanitized_len(value, len, NULL);
    char *val = alloc_malloc(need + 1);
    if (val)
        (void)utf8_sanitize(val, need + 1, value, len);
    return val;
}

int labels_setn(struct labels *ls, const char *name, const char *value, size_t len)
{
    int rc = 0;
    bool found;
    size_t at = labels_find(ls, name, &found);
    char *val = labels_value_dup(value, len);
    char *nm = NULL;
    if (!val) {
        rc = -ENOMEM;
        goto out;
    }
    if (found) {
        alloc_free(ls->v[at].value);
        ls->v[at].value = val;
        val = NULL;
        goto out;
    }
    if (ls->n >= LABELS_MAX) {
        rc = -ENOMEM;
        goto out;
    }
    if (ls->n == ls->cap) {
        size_t ncap = ls->cap ? ls->cap * 2 : 8;
        struct label *nv = alloc_realloc(ls->v, ncap * sizeof(*nv));
        if (!nv) {
            rc = -ENOMEM;
            goto out;
        }
        ls->v = nv;
        ls->cap = ncap;
    }
    nm = alloc_strdup(name);
    if (!nm) {
        rc = -ENOMEM;
        goto out;
    }
    memmove(&ls->v[at + 1], &ls->v[at], (ls->n - at) * sizeof(ls->v[0]));
    ls->v[at].name = nm;
    ls->v[at].value = val;
    ls->n++;
    val = NULL;
out:
    alloc_free(val);
    return rc;
}

int labels_set(struct labels *ls, const char *name, const char *value)
{
    return labels_setn(ls, name, value, strlen(value));
}

const char *labels_get(const struct labels *ls, const char *name)
{
    bool found;
    size_t at = labels_find(ls, name, &found);
    return found ? ls->v[at].value : NULL;
}

void labels_del(struct labels *ls, const char *name)
{
    bool found;
    size_t at = labels_find(ls, name, &found);
    if (!found)
        return;
    alloc_free(ls->v[at].name);
    alloc_free(ls->v[at].value);
    memmove(&ls->v[at], &ls->v[at + 1], (ls->n - at - 1) * sizeof(ls->v[0]));
    ls->n--;
}

int labels_copy(struct labels *dst, const struct labels *src)
{
    struct labels tmp;
    int rc = 0;
    labels_init(&tmp);
    if (src->n) {
        tmp.v = alloc_calloc(src->n, sizeof(tmp.v[0]));
        if (!tmp.v) {
            rc = -ENOMEM;
            goto out;
        }
        tmp.cap = src->n;
    }
    for (size_t i = 0; i < src->n; i++) {
        tmp.v[i].name = alloc_strdup(src->v[i].name);
        tmp.v[i].value = labels_value_dup(src->v[i].value, SIZE_MAX);
        tmp.n = i + 1; /* released below on failure, NULLs included */
        if (!tmp.v[i].name || !tmp.v[i].value) {
            rc = -ENOMEM;
            goto out;
        }
    }
    labels_release(dst);
    *dst = tmp;
    labels_init(&tmp);
out:
    labels_release(&tmp);
    return rc;
}

bool labels_equal(const struct labels *a, const struct labels *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->v[i].name, b->v[i].name) != 0 || strcmp(a->v[i].value, b->v[i].value) != 0)
            return false;
    }
    return true;
}

/* FNV-1a over every byte of name and value, each followed by its NUL, so that
 * ("ab", "c") and ("a", "bc") differ; from a start of its own (not FNV's
 * basis: kept, so that hashes are what they were). */
#define LABELS_HASH_START 1469598103934665603ull
uint64_t labels_hash(const struct labels *ls)
{
    uint64_t h = LABELS_HASH_START;
    for (size_t i = 0; i < ls->n; i++) {
        h = hash_fnv1a(h, ls->v[i].name, strlen(ls->v[i].name) + 1);
        h = hash_fnv1a(h, ls->v[i].value, strlen(ls->v[i].value) + 1);
    }
    return h;
}

bool labels_valid_name(const char *name)
{
    if (!name || !*name)
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && p != name))
            return false;
    }
    return true;
}
