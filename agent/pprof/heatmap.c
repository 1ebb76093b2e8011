/* SPDX-License-Identifier: MIT */
/*
 * heatmap.c: per-line counts of a window and the files' text, as JSON
 * (heatmap.h). Counted in one walk of the samples, leaf first, with a stamp
 * per line and per file so that a sample counts once in each.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "base/jsonw.h"
#include "pprof/heatmap.h"

#define HEATMAP_NONE UINT32_MAX

struct hm_file {
    uint32_t path; /* string id */
    int64_t samples, own;
    uint32_t stamp;
};

struct hm_line {
    uint32_t file; /* index into the files; HEATMAP_NONE: a free slot */
    int64_t line;
    int64_t own, total;
    uint32_t stamp;
};

struct hm_op {
    uint32_t line; /* slot of its line; HEATMAP_NONE: free */
    uint32_t op;   /* function id of the marker */
    int64_t n;
};

struct heatmap {
    const struct agg *a;
    uint32_t *file_of; /* per string id: file index + 1, 0: none yet */
    struct hm_file *files;
    size_t nfiles;
    struct hm_line *lines;
    size_t line_mask;
    struct hm_op *ops;
    size_t op_mask;
};

static size_t hm_pow2(size_t n)
{
    size_t c = 64;
    while (c < 2 * n + 2)
        c *= 2;
    return c;
}

static uint32_t hm_line_slot(struct heatmap *h, uint32_t file, int64_t line)
{
    uint64_t k = ((uint64_t)file << 32) ^ (uint64_t)line;
    for (size_t i = (size_t)((k * HASH_GOLDEN) >> 20) & h->line_mask;; i = (i + 1) & h->line_mask) {
        struct hm_line *l = &h->lines[i];
        if (l->file == HEATMAP_NONE) {
            *l = (struct hm_line){.file = file, .line = line};
            return (uint32_t)i;
        }
        if (l->file == file && l->line == line)
            return (uint32_t)i;
    }
}

static void hm_op_add(struct heatmap *h, uint32_t line, uint32_t op, int64_t n)
{
    uint64_t k = ((uint64_t)line << 32) | op;
    for (size_t i = (size_t)((k * HASH_GOLDEN) >> 20) & h->op_mask;; i = (i + 1) & h->op_mask) {
        struct hm_op *o = &h->ops[i];
        if (o->line == HEATMAP_NONE)
            *o = (struct hm_op){.line = line, .op = op};
        if (o->line == line && o->op == op) {
            o->n += n;
            return;
        }
    }
}

static void hm_count(struct heatmap *h, size_t si)
{
    const struct agg *a = h->a;
    const struct agg_sample *s = agg_sample(a, si);
    uint32_t stamp = (uint32_t)si + 1, op = HEATMAP_NONE;
    bool inner = true;
    for (uint32_t k = 0; k < s->nlocations; k++) {
        const struct agg_location *loc = agg_location(a, s->locations[k]);
        if (agg_function_is_opcode(a, loc->function)) {
            op = loc->function; /* the instruction of the next frame out */
            continue;
        }
        const struct agg_function *fn = agg_function(a, loc->function);
        if (loc->address || agg_function_is_marker(a, loc->function) || loc->line <= 0) {
            op = HEATMAP_NONE; /* a C frame or a marker: no line of a source file */
            continue;
        }
        uint32_t *fi = &h->file_of[fn->filename];
        if (!*fi) {
            h->files[h->nfiles] = (struct hm_file){.path = fn->filename};
            *fi = (uint32_t)++h->nfiles;
        }
        struct hm_file *f = &h->files[*fi - 1];
        uint32_t li = hm_line_slot(h, *fi - 1, loc->line);
        struct hm_line *l = &h->lines[li];
        if (inner) {
            l->own += s->count;
            f->own += s->count;
            inner = false;
        }
        if (l->stamp != stamp) {
            l->stamp = stamp;
            l->total += s->count;
        }
        if (f->stamp != stamp) {
            f->stamp = stamp;
            f->samples += s->count;
        }
        if (op != HEATMAP_NONE)
            hm_op_add(h, li, op, s->count);
        op = HEATMAP_NONE;
    }
}

static int hm_file_cmp(const void *x, const void *y)
{
    const struct hm_file *a = x, *b = y;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    if (a->own != b->own)
        return a->own > b->own ? -1 : 1;
    return a->path < b->path ? -1 : a->path > b->path;
}

static int hm_line_cmp(const void *x, const void *y)
{
    const struct hm_line *a = x, *b = y;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int hm_op_cmp(const void *x, const void *y)
{
    const struct hm_op *a = x, *b = y;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->n > b->n ? -1 : a->n < b->n;
}

/*
 * The text of a file as an array of lines (a final newline ends the last
 * one; a carriage return before a newline dropped), each shown as a page
 * shows it (JSONW_STRING_PICTURES), as the value under @key. Written by
 * the same code whether @w writes or only counts (the budget).
 */
static void hm_text(struct jsonw *w, const char *key, const char *p, size_t n)
{
    jsonw_array(w, key);
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (p + i)) : n - i;
        size_t shown = len && p[i + len - 1] == '\r' ? len - 1 : len;
        jsonw_stringn(w, NULL, p + i, shown, JSONW_STRING_PICTURES);
        i += len + (nl != NULL);
    }
    jsonw_end(w);
}

/* "<op NAME (BASE)>" -> "NAME (BASE)", as the key of its count */
static void hm_op(struct jsonw *w, const char *marker, int64_t n)
{
    char name[128];
    size_t len = strlen(marker);
    if (len > 5 && strncmp(marker, "<op ", 4) == 0 && marker[len - 1] == '>') {
        snprintf(name, sizeof(name), "%.*s", (int)(len - 5), marker + 4);
        jsonw_int(w, name, n);
    } else {
        jsonw_int(w, marker, n);
    }
}

/* The texts in the page so far: which file each is, and the budget left. */
struct hm_texts {
    struct heatmap_source_id *ids; /* of the files whose text the page holds */
    uint32_t *at;                  /* ... and their index in "files" */
    size_t n;
    size_t budget;   /* bytes the texts may take in all */
    size_t left;     /* ... not spent yet */
    size_t left_off; /* files whose text did not fit */
};

/* The "text", "same_as" or "error" of file @fi, named @path, read through @source. */
static void hm_source(struct hm_texts *t, uint32_t fi, const char *path, heatmap_source_fn source,
                      void *arg, struct buf *text, struct jsonw *w)
{
    char why[256] = "no source reader";
    struct heatmap_source_id id = {0};
    buf_reset(text);
    int err = source ? source(arg, path, text, &id, why, sizeof(why)) : -ENOENT;
    const char *p = buf_str(text);
    size_t n = buf_len(text);
    if (!err && memchr(p, '\0', n)) {
        err = -EINVAL;
        snprintf(why, sizeof(why), "not text: it holds a NUL byte");
    }
    bool known = id.dev || id.ino;
    for (size_t k = 0; !err && known && k < t->n; k++) {
        if (t->ids[k].dev == id.dev && t->ids[k].ino == id.ino) {
            jsonw_uint(w, "same_as", t->at[k]);
            return;
        }
    }
    size_t need = 0;
    if (!err) {
        struct jsonw count;
        jsonw_init_count(&count, 0);
        hm_text(&count, NULL, p, n);
        need = (size_t)jsonw_bytes(&count);
    }
    if (!err && need > t->left) {
        err = -EFBIG;
        snprintf(why, sizeof(why),
                 "left out: the page's source budget is spent (%zu of its %zu bytes left, "
                 "this text takes %zu)",
                 t->left, t->budget, need);
        t->left_off++;
    }
    if (err) {
        jsonw_string(w, "error", why);
        return;
    }
    hm_text(w, "text", p, n);
    t->left -= need;
    if (known) {
        t->ids[t->n] = id;
        t->at[t->n++] = fi;
    }
}

static void hm_write(struct heatmap *h, const struct hm_line *lines, size_t nlines,
                     const struct hm_op *ops, size_t nops, heatmap_source_fn source, void *arg,
                     struct hm_texts *t, struct jsonw *w)
{
    const struct agg *a = h->a;
    int64_t samples = 0;
    for (size_t i = 0; i < agg_sample_count(a); i++)
        samples += agg_sample(a, i)->count;
    jsonw_object(w, NULL);
    jsonw_int(w, "samples", samples);
    jsonw_array(w, "files");
    size_t li = 0, oi = 0;
    struct buf text;
    buf_init(&text, HEATMAP_MAX_TEXT);
    for (size_t fi = 0; fi < h->nfiles && fi < HEATMAP_MAX_FILES; fi++) {
        const struct hm_file *f = &h->files[fi];
        const char *path = agg_string(a, f->path);
        jsonw_object(w, NULL);
        jsonw_string(w, "path", path);
        jsonw_int(w, "samples", f->samples);
        jsonw_int(w, "own", f->own);
        hm_source(t, (uint32_t)fi, path, source, arg, &text, w);
        jsonw_array(w, "lines");
        for (; li < nlines && lines[li].file == fi; li++) {
            const struct hm_line *l = &lines[li];
            jsonw_array(w, NULL);
            jsonw_int(w, NULL, l->line);
            jsonw_int(w, NULL, l->own);
            jsonw_int(w, NULL, l->total);
            while (oi < nops && ops[oi].line < li)
                oi++;
            if (oi < nops && ops[oi].line == li) {
                jsonw_object(w, NULL);
                for (; oi < nops && ops[oi].line == li; oi++)
                    hm_op(w, agg_string(a, agg_function(a, ops[oi].op)->name), ops[oi].n);
                jsonw_end(w);
            }
            jsonw_end(w);
        }
        jsonw_end(w);
        jsonw_end(w);
    }
    buf_release(&text);
    jsonw_end(w);
    if (h->nfiles > HEATMAP_MAX_FILES)
        jsonw_uint(w, "left_off", h->nfiles - HEATMAP_MAX_FILES);
    if (t->left_off)
        jsonw_uint(w, "text_left_off", t->left_off);
    jsonw_end(w);
}

PYPROFD_STATIC int heatmap_json_write_budget(const struct agg *a, heatmap_source_fn source,
                                             void *arg, size_t budget, FILE *out)
{
    struct heatmap h = {.a = a};
    size_t nloc = agg_location_count(a);
    size_t lcap = hm_pow2(nloc), ocap = hm_pow2(nloc);
    h.file_of = alloc_calloc(agg_string_count(a) + 1, sizeof(*h.file_of));
    h.files = alloc_calloc(agg_function_count(a) + 1, sizeof(*h.files));
    h.lines = alloc_calloc(lcap, sizeof(*h.lines));
    h.ops = alloc_calloc(ocap, sizeof(*h.ops));
    uint32_t *file_rank = alloc_calloc(agg_function_count(a) + 1, sizeof(*file_rank));
    uint32_t *slot_rank = alloc_calloc(lcap, sizeof(*slot_rank));
    struct hm_line *lines = alloc_calloc(lcap, sizeof(*lines));
    struct hm_texts texts = {.ids = alloc_calloc(HEATMAP_MAX_FILES, sizeof(*texts.ids)),
                             .at = alloc_calloc(HEATMAP_MAX_FILES, sizeof(*texts.at)),
                             .budget = budget,
                             .left = budget};
    struct jsonw w;
    int err = 0;
    if (!h.file_of || !h.files || !h.lines || !h.ops || !file_rank || !slot_rank || !lines ||
        !texts.ids || !texts.at) {
        err = -ENOMEM;
        goto out;
    }
    h.line_mask = lcap - 1;
    h.op_mask = ocap - 1;
    for (size_t i = 0; i < lcap; i++)
        h.lines[i].file = HEATMAP_NONE;
    for (size_t i = 0; i < ocap; i++)
        h.ops[i].line = HEATMAP_NONE;
    for (size_t si = 0; si < agg_sample_count(a); si++)
        hm_count(&h, si);

    /* files by samples; lines by (file's place, line); ops by (line's place, count) */
    qsort(h.files, h.nfiles, sizeof(*h.files), hm_file_cmp);
    for (size_t i = 0; i < h.nfiles; i++)
        file_rank[h.file_of[h.files[i].path] - 1] = (uint32_t)i;
    size_t nlines = 0;
    for (size_t i = 0; i < lcap; i++) {
        if (h.lines[i].file == HEATMAP_NONE)
            continue;
        lines[nlines] = h.lines[i];
        lines[nlines].file = file_rank[h.lines[i].file];
        lines[nlines].stamp = (uint32_t)i; /* its slot, to find its ops */
        nlines++;
    }
    qsort(lines, nlines, sizeof(*lines), hm_line_cmp);
    for (size_t i = 0; i < nlines; i++)
        slot_rank[lines[i].stamp] = (uint32_t)i;
    size_t nops = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (h.ops[i].line == HEATMAP_NONE)
            continue;
        h.ops[nops] = h.ops[i];
        h.ops[nops].line = slot_rank[h.ops[i].line]; /* now its line's place */
        nops++;
    }
    qsort(h.ops, nops, sizeof(*h.ops), hm_op_cmp);
    jsonw_init_file(&w, out, 0);
    hm_write(&h, lines, nlines, h.ops, nops, source, arg, &texts, &w);
    err = jsonw_finish(&w);
out:
    alloc_free(h.file_of);
    alloc_free(h.files);
    alloc_free(h.lines);
    alloc_free(h.ops);
    alloc_free(file_rank);
    alloc_free(slot_rank);
    alloc_free(lines);
    alloc_free(texts.ids);
    alloc_free(texts.at);
    return err;
}

int heatmap_json_write(const struct agg *a, heatmap_source_fn source, void *arg, FILE *out)
{
    return heatmap_json_write_budget(a, source, arg, HEATMAP_MAX_PAGE_TEXT, out);
}
