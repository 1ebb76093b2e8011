/* SPDX-License-Identifier: MIT */
/*
 * pprof_test.c: decoding, checking and rendering pprof profiles in tests
 * (see pprof_test.h).
 */
#include "base/compat.h"

#include <stdarg.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "pprof/gzip.h"
#include "pprof_test.h"

static void *pprof_test_alloc(void *data, size_t size)
{
    (void)data;
    return alloc_malloc(size);
}

static void pprof_test_dealloc(void *data, void *p)
{
    (void)data;
    alloc_free(p);
}

static ProtobufCAllocator pprof_test_allocator_ = {
    .alloc = pprof_test_alloc,
    .free = pprof_test_dealloc,
    .allocator_data = NULL,
};

ProtobufCAllocator *pprof_test_allocator(void)
{
    return &pprof_test_allocator_;
}

int pprof_test_decode(const uint8_t *gz, size_t len, Perftools__Profiles__Profile **out)
{
    uint8_t *raw = NULL;
    size_t raw_len = 0;
    int err = gzip_decompress(gz, len, PPROF_TEST_MAX_BYTES, &raw, &raw_len);
    if (err)
        return err;
    Perftools__Profiles__Profile *p =
        perftools__profiles__profile__unpack(pprof_test_allocator(), raw_len, raw);
    alloc_free(raw);
    if (!p)
        return -EPROTO;
    *out = p;
    return 0;
}

void pprof_test_free(Perftools__Profiles__Profile *p)
{
    if (p)
        perftools__profiles__profile__free_unpacked(p, pprof_test_allocator());
}

PYPROFD_PRINTF(3, 4)
static int pprof_test_fail(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static bool pprof_test_str_ok(const Perftools__Profiles__Profile *p, int64_t idx)
{
    return idx >= 0 && (uint64_t)idx < p->n_string_table;
}

int pprof_test_check(const Perftools__Profiles__Profile *p, char *why, size_t why_len)
{
    if (p->n_string_table == 0 || strcmp(p->string_table[0], "") != 0)
        return pprof_test_fail(why, why_len, "string_table[0] is not \"\"");
    for (size_t i = 0; i < p->n_string_table; i++) {
        /* proto3 strings: strict decoders refuse the whole profile otherwise */
        if (!utf8_valid(p->string_table[i], strlen(p->string_table[i])))
            return pprof_test_fail(why, why_len, "string %zu is not valid UTF-8", i);
        for (size_t k = i + 1; k < p->n_string_table; k++) {
            if (strcmp(p->string_table[i], p->string_table[k]) == 0)
                return pprof_test_fail(why, why_len, "string %zu repeats %zu", k, i);
        }
    }
    if (p->n_sample && p->n_sample_type == 0)
        return pprof_test_fail(why, why_len, "samples without sample types");
    for (size_t i = 0; i < p->n_sample_type; i++) {
        const Perftools__Profiles__ValueType *vt = p->sample_type[i];
        if (!pprof_test_str_ok(p, vt->type) || !pprof_test_str_ok(p, vt->unit))
            return pprof_test_fail(why, why_len, "sample_type %zu: bad string index", i);
        if (strchr(p->string_table[vt->type], '-'))
            return pprof_test_fail(why, why_len, "sample_type %zu has a '-'", i);
    }
    if (p->period_type && (!pprof_test_str_ok(p, p->period_type->type) ||
                           !pprof_test_str_ok(p, p->period_type->unit)))
        return pprof_test_fail(why, why_len, "period_type: bad string index");
    if (!pprof_test_str_ok(p, p->drop_frames) || !pprof_test_str_ok(p, p->keep_frames) ||
        !pprof_test_str_ok(p, p->default_sample_type) || !pprof_test_str_ok(p, p->doc_url))
        return pprof_test_fail(why, why_len, "profile: bad string index");
    for (size_t i = 0; i < p->n_comment; i++) {
        if (!pprof_test_str_ok(p, p->comment[i]))
            return pprof_test_fail(why, why_len, "comment %zu: bad string index", i);
    }
    for (size_t i = 0; i < p->n_mapping; i++) {
        const Perftools__Profiles__Mapping *m = p->mapping[i];
        if (m->id != i + 1)
            return pprof_test_fail(why, why_len, "mapping %zu has id %" PRIu64, i, m->id);
        if (!pprof_test_str_ok(p, m->filename) || !pprof_test_str_ok(p, m->build_id))
            return pprof_test_fail(why, why_len, "mapping %zu: bad string index", i);
    }
    for (size_t i = 0; i < p->n_function; i++) {
        const Perftools__Profiles__Function *f = p->function[i];
        if (f->id != i + 1)
            return pprof_test_fail(why, why_len, "function %zu has id %" PRIu64, i, f->id);
        if (!pprof_test_str_ok(p, f->name) || !pprof_test_str_ok(p, f->system_name) ||
            !pprof_test_str_ok(p, f->filename))
            return pprof_test_fail(why, why_len, "function %zu: bad string index", i);
    }
    for (size_t i = 0; i < p->n_location; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        if (l->id != i + 1)
            return pprof_test_fail(why, why_len, "location %zu has id %" PRIu64, i, l->id);
        if (l->mapping_id > p->n_mapping)
            return pprof_test_fail(why, why_len, "location %zu: no mapping %" PRIu64, i,
                                   l->mapping_id);
        if (l->n_line == 0)
            return pprof_test_fail(why, why_len, "location %zu has no line", i);
        for (size_t k = 0; k < l->n_line; k++) {
            uint64_t fn = l->line[k]->function_id;
            if (fn == 0 || fn > p->n_function)
                return pprof_test_fail(why, why_len, "location %zu: no function %" PRIu64, i, fn);
        }
    }
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        if (s->n_value != p->n_sample_type)
            return pprof_test_fail(why, why_len, "sample %zu has %zu values", i, s->n_value);
        for (size_t k = 0; k < s->n_location_id; k++) {
            if (s->location_id[k] == 0 || s->location_id[k] > p->n_location)
                return pprof_test_fail(why, why_len, "sample %zu: no location %" PRIu64, i,
                                       s->location_id[k]);
        }
        for (size_t k = 0; k < s->n_label; k++) {
            const Perftools__Profiles__Label *l = s->label[k];
            if (l->key == 0 || !pprof_test_str_ok(p, l->key) || !pprof_test_str_ok(p, l->str) ||
                !pprof_test_str_ok(p, l->num_unit))
                return pprof_test_fail(why, why_len, "sample %zu label %zu: bad string", i, k);
            if (l->str && (l->num || l->num_unit))
                return pprof_test_fail(why, why_len, "sample %zu label %zu: str and num", i, k);
            if (!l->str && !l->num && !l->num_unit)
                return pprof_test_fail(why, why_len, "sample %zu label %zu: empty value", i, k);
            /* profile.proto: several values for one key "should never be used" */
            for (size_t j = 0; j < k; j++) {
                if (s->label[j]->key == l->key)
                    return pprof_test_fail(why, why_len, "sample %zu label %zu repeats key of %zu",
                                           i, k, j);
            }
        }
    }
    return 0;
}

static void pprof_test_quote(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* The string at @idx, or a marker when the index is bad (rendering never fails). */
static const char *pprof_test_str(const Perftools__Profiles__Profile *p, int64_t idx)
{
    return pprof_test_str_ok(p, idx) ? p->string_table[idx] : "<bad index>";
}

static void pprof_test_value_type(FILE *out, const Perftools__Profiles__Profile *p,
                                  const Perftools__Profiles__ValueType *vt)
{
    fprintf(out, " %s/%s", pprof_test_str(p, vt->type), pprof_test_str(p, vt->unit));
}

void pprof_test_render(const Perftools__Profiles__Profile *p, FILE *out)
{
    fputs("sample_type", out);
    for (size_t i = 0; i < p->n_sample_type; i++)
        pprof_test_value_type(out, p, p->sample_type[i]);
    fputs("\nperiod_type", out);
    if (p->period_type)
        pprof_test_value_type(out, p, p->period_type);
    fprintf(out, " period=%" PRId64 "\n", p->period);
    fprintf(out, "time_nanos=%" PRId64 " duration_nanos=%" PRId64 "\n", p->time_nanos,
            p->duration_nanos);
    fprintf(out,
            "default_sample_type=%" PRId64 " drop_frames=%" PRId64 " keep_frames=%" PRId64
            " doc_url=%" PRId64 "\n",
            p->default_sample_type, p->drop_frames, p->keep_frames, p->doc_url);
    for (size_t i = 0; i < p->n_comment; i++) {
        fputs("comment ", out);
        pprof_test_quote(out, pprof_test_str(p, p->comment[i]));
        fputc('\n', out);
    }
    fprintf(out, "strings %zu\n", p->n_string_table);
    for (size_t i = 0; i < p->n_string_table; i++) {
        fprintf(out, "  %zu ", i);
        pprof_test_quote(out, p->string_table[i]);
        fputc('\n', out);
    }
    fprintf(out, "mappings %zu\n", p->n_mapping);
    for (size_t i = 0; i < p->n_mapping; i++) {
        const Perftools__Profiles__Mapping *m = p->mapping[i];
        fprintf(out, "  mapping %" PRIu64 " [%#" PRIx64 ", %#" PRIx64 ") offset=%#" PRIx64 " ",
                m->id, m->memory_start, m->memory_limit, m->file_offset);
        pprof_test_quote(out, pprof_test_str(p, m->filename));
        fputc('\n', out);
    }
    fprintf(out, "functions %zu\n", p->n_function);
    for (size_t i = 0; i < p->n_function; i++) {
        const Perftools__Profiles__Function *f = p->function[i];
        fprintf(out, "  function %" PRIu64 " name=", f->id);
        pprof_test_quote(out, pprof_test_str(p, f->name));
        fputs(" system_name=", out);
        pprof_test_quote(out, pprof_test_str(p, f->system_name));
        fputs(" filename=", out);
        pprof_test_quote(out, pprof_test_str(p, f->filename));
        fprintf(out, " start_line=%" PRId64 "\n", f->start_line);
    }
    fprintf(out, "locations %zu\n", p->n_location);
    for (size_t i = 0; i < p->n_location; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        fprintf(out, "  location %" PRIu64 " mapping=%" PRIu64 " address=%#" PRIx64 "%s\n", l->id,
                l->mapping_id, l->address, l->is_folded ? " folded" : "");
        for (size_t k = 0; k < l->n_line; k++)
            fprintf(out, "    line function=%" PRIu64 " line=%" PRId64 " column=%" PRId64 "\n",
                    l->line[k]->function_id, l->line[k]->line, l->line[k]->column);
    }
    fprintf(out, "samples %zu\n", p->n_sample);
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        fputs("  sample values=", out);
        for (size_t k = 0; k < s->n_value; k++)
            fprintf(out, "%s%" PRId64, k ? "," : "", s->value[k]);
        for (size_t k = 0; k < s->n_label; k++) {
            const Perftools__Profiles__Label *l = s->label[k];
            fprintf(out, " %s=", pprof_test_str(p, l->key));
            if (l->str)
                pprof_test_quote(out, pprof_test_str(p, l->str));
            else
                fprintf(out, "%" PRId64, l->num);
            if (l->num_unit)
                fprintf(out, "[%s]", pprof_test_str(p, l->num_unit));
        }
        fputc('\n', out);
        /* the stack, leaf first, resolved */
        for (size_t k = 0; k < s->n_location_id; k++) {
            uint64_t id = s->location_id[k];
            if (id == 0 || id > p->n_location) {
                fprintf(out, "    <bad location %" PRIu64 ">\n", id);
                continue;
            }
            const Perftools__Profiles__Location *l = p->location[id - 1];
            for (size_t n = 0; n < l->n_line; n++) {
                const Perftools__Profiles__Line *ln = l->line[n];
                const char *name = "<bad function>", *file = "";
                if (ln->function_id && ln->function_id <= p->n_function) {
                    const Perftools__Profiles__Function *f = p->function[ln->function_id - 1];
                    name = pprof_test_str(p, f->name);
                    file = pprof_test_str(p, f->filename);
                }
                fprintf(out, "    %s %s:%" PRId64 ":%" PRId64 "\n", name, file, ln->line,
                        ln->column);
            }
        }
    }
}

/*
 * The fixed window. Frames are listed leaf first, as the unwinder gives them.
 * Thread 101 runs a request handler, called from module level, that computes (two lines of
 * compute(), coalesced repeats, and a return to an earlier stack that must be summed); thread 102
 * reads and collects garbage; thread 103 runs two asyncio tasks with the same stack; thread 104 has
 * no name. 12 samples of 10 ms.
 */
#define PPROF_TEST_PERIOD 10000000 /* 10 ms: 100 Hz */

#define PPROF_TEST_PY(fn_, file_, first, raddr, line, col)                                         \
    {                                                                                              \
        .kind = UNWIND_FRAME_PYTHON, .function = (fn_), .file = (file_), .first_line = (first),    \
        .code_raddr = (raddr), .pos = {(line), (line), (col), (col) + 10},                         \
    }
#define PPROF_TEST_MARKER(kind_, fn_)                                                              \
    {                                                                                              \
        .kind = (kind_), .function = (fn_), .file = "~", .first_line = 0, .code_raddr = 0,         \
        .pos = {LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN},       \
    }

static const struct unwind_frame pprof_test_module =
    PPROF_TEST_PY("<module>", "/srv/app.py", 1, 0x0800, 40, 0);
static const struct unwind_frame pprof_test_main =
    PPROF_TEST_PY("main", "/srv/app.py", 10, 0x1000, 12, 4);
static const struct unwind_frame pprof_test_handle =
    PPROF_TEST_PY("Server.handle", "/srv/app.py", 20, 0x2000, 25, 8);
static const struct unwind_frame pprof_test_compute5 =
    PPROF_TEST_PY("compute", "/srv/lib/calc.py", 1, 0x3000, 5, 11);
static const struct unwind_frame pprof_test_compute7 =
    PPROF_TEST_PY("compute", "/srv/lib/calc.py", 1, 0x3000, 7, 4);
static const struct unwind_frame pprof_test_read =
    PPROF_TEST_PY("Reader.read", "/usr/lib/python3.14/io.py", 100, 0x4000, 120, 8);
static const struct unwind_frame pprof_test_fetch =
    PPROF_TEST_PY("fetch", "/srv/tasks.py", 3, 0x5000, 6, 15);
static const struct unwind_frame pprof_test_run =
    PPROF_TEST_PY("Runner.run", "/usr/lib/python3.14/asyncio/runners.py", 110, 0x6000, 127, 15);
static const struct unwind_frame pprof_test_gc = PPROF_TEST_MARKER(UNWIND_FRAME_GC, "<GC>");
static const struct unwind_frame pprof_test_native =
    PPROF_TEST_MARKER(UNWIND_FRAME_NATIVE, "<native>");

int pprof_test_fill(struct agg *a)
{
    const struct unwind_frame busy5[] = {pprof_test_compute5, pprof_test_handle, pprof_test_main,
                                         pprof_test_module};
    const struct unwind_frame busy7[] = {pprof_test_compute7, pprof_test_handle, pprof_test_main,
                                         pprof_test_module};
    const struct unwind_frame reading[] = {pprof_test_read, pprof_test_native, pprof_test_handle};
    const struct unwind_frame collecting[] = {pprof_test_gc, pprof_test_compute5,
                                              pprof_test_handle};
    const struct unwind_frame task[] = {pprof_test_fetch, pprof_test_run};
    const struct unwind_frame idle[] = {pprof_test_main};
    const int64_t t = PPROF_TEST_PERIOD;
    int err = 0;

    for (int i = 0; i < 3 && !err; i++) /* repeats: coalesced */
        err = agg_add_in(a, busy5, 4, 101, 0, "MainThread", NULL, 1, t);
    if (!err)
        err = agg_add_in(a, busy7, 4, 101, 0, "MainThread", NULL, 1, t);
    if (!err) /* back to the first stack: summed into its sample */
        err = agg_add_in(a, busy5, 4, 101, 0, "MainThread", NULL, 1, t);
    if (!err)
        err = agg_add_in(a, reading, 3, 102, 0, "worker-1", NULL, 2, 2 * t);
    if (!err)
        err = agg_add_in(a, collecting, 3, 102, 0, "worker-1", NULL, 1, t);
    if (!err)
        err = agg_add_in(a, task, 2, 103, 0, "asyncio_0", "fetch-1", 2, 2 * t);
    if (!err)
        err = agg_add_in(a, task, 2, 103, 0, "asyncio_0", "fetch-2", 1, t);
    if (!err) /* no name: "unknown", never an empty label */
        err = agg_add_in(a, idle, 1, 104, 0, "", NULL, 1, t);
    return err;
}

struct pprof_meta pprof_test_meta(void)
{
    return (struct pprof_meta){
        .value_type = "cpu",
        .value_unit = "nanoseconds",
        .period_ns = PPROF_TEST_PERIOD,
        .time_nanos = 1767225600000000000, /* 2026-01-01T00:00:00Z */
        .duration_nanos = 10000000000,
        .comment = "pyprofd test profile",
    };
}
