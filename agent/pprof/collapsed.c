/* SPDX-License-Identifier: MIT */
/*
 * collapsed.c: folded stack output (see collapsed.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "pprof/collapsed.h"

/* ';' separates frames and a space ends the stack: keep them out of names. */
static void collapsed_put(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, out);
}

/* One folded line (without its count) into @out. */
static void collapsed_stack(const struct agg *a, const struct agg_sample *s, FILE *out)
{
    for (uint32_t k = s->nlocations; k-- > 0;) {
        const struct agg_location *loc = agg_location(a, s->locations[k]);
        const struct agg_function *fn = agg_function(a, loc->function);
        const char *file = agg_string(a, fn->filename);
        collapsed_put(out, agg_string(a, fn->name));
        if (strcmp(file, "~") != 0) { /* markers have no place in a file */
            fputs(" (", out);
            collapsed_put(out, file);
            fprintf(out, ":%" PRId64 ")", loc->line);
        }
        if (k > 0)
            fputc(';', out);
    }
}

/* Longest folded line kept: 1536 frames of about 150 bytes. */
#define COLLAPSED_MAX_LINE (256u * 1024u)

struct collapsed_line {
    char *text;
    int64_t count;
};

static int collapsed_cmp(const void *x, const void *y)
{
    return strcmp(((const struct collapsed_line *)x)->text,
                  ((const struct collapsed_line *)y)->text);
}

/*
 * Samples differ by column, thread and task, which folded stacks do not show:
 * lines with the same text are merged, so each stack appears once.
 */
int collapsed_write(const struct agg *a, FILE *out)
{
    size_t n = agg_sample_count(a), nlines = 0;
    struct collapsed_line *lines = alloc_calloc(n ? n : 1, sizeof(*lines));
    char *buf = alloc_malloc(COLLAPSED_MAX_LINE);
    int err = lines && buf ? 0 : -ENOMEM;
    for (size_t i = 0; i < n && !err; i++) {
        const struct agg_sample *s = agg_sample(a, i);
        if (s->count <= 0)
            continue;
        memset(buf, 0, COLLAPSED_MAX_LINE);
        FILE *mem = fmemopen(buf, COLLAPSED_MAX_LINE - 1, "w");
        if (!mem) {
            err = -ENOMEM;
            break;
        }
        collapsed_stack(a, s, mem); /* a longer stack is cut, never overrun */
        fclose(mem);
        lines[nlines].count = s->count;
        lines[nlines].text = alloc_strdup(buf);
        if (!lines[nlines++].text)
            err = -ENOMEM;
    }
    if (!err) {
        qsort(lines, nlines, sizeof(*lines), collapsed_cmp);
        for (size_t i = 0; i < nlines;) {
            int64_t count = 0;
            size_t j = i;
            for (; j < nlines && strcmp(lines[j].text, lines[i].text) == 0; j++)
                count += lines[j].count;
            fprintf(out, "%s %" PRId64 "\n", lines[i].text, count);
            i = j;
        }
        if (ferror(out))
            err = -EIO;
    }
    for (size_t i = 0; i < nlines; i++)
        alloc_free(lines[i].text);
    alloc_free(lines);
    alloc_free(buf);
    return err;
}
