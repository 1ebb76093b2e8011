/* SPDX-License-Identifier: MIT */
/*
 * collapsed.c: folded stack output (see collapsed.h).
 */
#include "base/compat.h"

#include "pprof/collapsed.h"

/* ';' separates frames and a space ends the stack: keep them out of names. */
static void collapsed_put(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, out);
}

int collapsed_write(const struct agg *a, FILE *out)
{
    for (size_t i = 0; i < agg_sample_count(a); i++) {
        const struct agg_sample *s = agg_sample(a, i);
        if (s->count <= 0)
            continue;
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
        fprintf(out, " %" PRId64 "\n", s->count);
    }
    return ferror(out) ? -EIO : 0;
}
