/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: pprof_build_multi() (agent/pprof/), the merged profile the
 * HTTP server answers with. The input is a little program that fills 1..8
 * windows with tiny caps (so samples are dropped, some windows keep tables
 * but no samples), gives each part 0..7 labels from a palette (empty,
 * repeated, reserved, long and UTF-8 names and values, strings the windows or
 * the encoder also use), encodes, decodes and checks every consumer rule
 * (pprof_test_check()) and, against the windows:
 *  - part k's samples come after part k-1's, are its window's in order, with
 *    its counts, stacks and thread labels;
 *  - each sample carries exactly its part's labels: the first written label
 *    of each name, none with an empty name or value, none of the encoder's own
 *    names; a part without samples shows up nowhere;
 *  - the sample totals of each part are what its window accepted;
 *  - string_table is exactly the windows' strings, the encoder's few and the
 *    labels of parts that have samples, each once;
 *  - the same parts as a flame graph's call tree (pprof/flamegraph.h) are
 *    valid JSON without a raw '<', every node at least the sum of its
 *    children, the root every sample of every part.
 *
 * Bytes past the end of the input read as 0, so a short input ends in empty,
 * unlabelled parts.
 *
 *   byte 0   value type (bits 0-1: cpu, wall, gil, time), comment (bit 2),
 *            period in ms (bits 4-7)
 *   byte 1   output cap / 32 (0: the default cap), so -E2BIG is reached
 *   byte 2   number of parts - 1 (% 8)
 *   per part:
 *     byte   labels (bits 0-2: count), NULL labels (bit 3), the previous
 *            part's window again (bit 4: no samples of its own follow),
 *            tight caps (bit 5)
 *     bytes  one per label: name (high nibble), value (low nibble)
 *     byte   number of samples (% 8; 0: an empty window)
 *     per sample: thread (% 4), task (% 3, 0: none), count (% 8 + 1),
 *            depth (% 8), then depth frame palette indices (% 16)
 */
#include "base/compat.h"

#include <json-c/json.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "pprof/flamegraph.h"
#include "pprof/pprof_build.h"
#include "pprof_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_PARTS  8
#define FUZZ_LABELS 7
#define FUZZ_LONG   300

#define FUZZ_F(fn_, file_, first, line, col)                                                       \
    {                                                                                              \
        .kind = UNWIND_FRAME_PYTHON, .function = (fn_), .file = (file_), .first_line = (first),    \
        .code_raddr = 0x1000u + (first), .pos = {(line), (line), (col), (col) + 1},                \
    }

static const struct unwind_frame fuzz_palette[16] = {
    FUZZ_F("<module>", "/a.py", 1, 3, 0),
    FUZZ_F("main", "/a.py", 5, 7, 4),
    FUZZ_F("main", "/a.py", 5, 8, 4),
    FUZZ_F("Klass.method", "/a.py", 20, 22, 8),
    FUZZ_F("pid", "job", 24, 25, 12), /* strings the labels use too */
    FUZZ_F("<lambda>", "/b.py", 1, 1, 30),
    FUZZ_F("work", "/b.py", 10, 11, 4),
    FUZZ_F("work", "/b.py", 10, 12, LINETABLE_UNKNOWN),
    FUZZ_F("cpu", "thread_id", 1, 1, 0),
    FUZZ_F("", "", 0, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN),
    FUZZ_F("n\xc3\xa4me", "/\xe2\x82\xac.py", 2, 2, 2),
    FUZZ_F("quote\"and\\", "/c.py", 3, 4, 5),
    {.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"},
    {.kind = UNWIND_FRAME_NATIVE, .function = "<native>", .file = "~"},
    {.kind = UNWIND_FRAME_UNREADABLE, .function = "<unknown function>", .file = "<unknown file>"},
    FUZZ_F("deep", "/d.py", 1000000, 2000000, 1000),
};

static const char *const fuzz_threads[4] = {"MainThread", "worker", "", NULL};
static const char *const fuzz_tasks[3] = {NULL, "task-1", "task-2"};
static const char *const fuzz_value_types[4] = {"cpu", "wall", "gil", "time"};

/*
 * Label palettes. Name FUZZ_LONG_NAME and value FUZZ_LONG_VALUE are long
 * strings made at first use (labels.h takes any length); the other NULL
 * entries are NULL, which no set from labels.c holds but the encoder checks.
 */
#define FUZZ_LONG_NAME  7
#define FUZZ_LONG_VALUE 3
static char fuzz_long_name[FUZZ_LONG + 1], fuzz_long_value[FUZZ_LONG + 1];
static const char *const fuzz_names[16] = {
    "pid",          "job",           "",
    "thread_name",  "task_name",     "thread_id",
    "pid",          NULL /* long */, "zon\xc3\xa9",
    "service_name", "samples",       "main",
    "a-b",          "instance",      "\xe2\x82\xac",
    NULL,
};
static const char *const fuzz_values[16] = {
    "",     "1",      "2",           NULL /* long */, "\xc3\xa4\xe2\x82\xac",
    "main", "cpu",    "nanoseconds", "MainThread",    NULL,
    "x",    "task-1", "/a.py",       "thread_id",     "a\"b\\c",
    "1",
};

static const struct agg_limits fuzz_limits[2] = {
    {.string_bytes = 256,
     .strings = 24,
     .functions = 10,
     .locations = 12,
     .samples = 12,
     .stack_slots = 48,
     .threads = 4},
    /* tight: whole windows of dropped samples, with the tables they left */
    {.string_bytes = 64,
     .strings = 6,
     .functions = 3,
     .locations = 3,
     .samples = 2,
     .stack_slots = 3,
     .threads = 2},
};

struct fuzz_in {
    const uint8_t *p;
    size_t n, i;
};

static uint8_t fuzz_byte(struct fuzz_in *in)
{
    return in->i < in->n ? in->p[in->i++] : 0;
}

struct fuzz_part {
    size_t win;                    /* index into fuzz_case.win */
    struct label lab[FUZZ_LABELS]; /* what the encoder gets */
    struct labels ls;
    bool null_labels;
    const char *want[FUZZ_LABELS][2]; /* the labels every sample must carry */
    size_t nwant;
};

struct fuzz_case {
    struct agg *win[FUZZ_PARTS];
    int64_t count[FUZZ_PARTS], nanos[FUZZ_PARTS]; /* accepted by each window */
    size_t nwin;
    struct fuzz_part part[FUZZ_PARTS];
    struct pprof_part pp[FUZZ_PARTS];
    size_t nparts;
    struct pprof_meta m;
};

static const char *fuzz_name(size_t i)
{
    return i == FUZZ_LONG_NAME ? fuzz_long_name : fuzz_names[i];
}

static const char *fuzz_value(size_t i)
{
    return i == FUZZ_LONG_VALUE ? fuzz_long_value : fuzz_values[i];
}

static bool fuzz_reserved(const char *name)
{
    return strcmp(name, "thread_id") == 0 || strcmp(name, "thread_name") == 0 ||
           strcmp(name, "task_name") == 0;
}

/*
 * The labels the header promises for @fp, worked out here independently of
 * the encoder: the first label of each name with a non-empty name and value
 * that is not the encoder's; none at all for a window without samples.
 */
static void fuzz_expect(struct fuzz_part *fp, const struct agg *a)
{
    fp->nwant = 0;
    if (fp->null_labels || agg_sample_count(a) == 0)
        return;
    for (size_t i = 0; i < fp->ls.n; i++) {
        const char *name = fp->lab[i].name, *value = fp->lab[i].value;
        if (!name || !*name || !value || !*value || fuzz_reserved(name))
            continue;
        bool seen = false;
        for (size_t k = 0; k < fp->nwant; k++)
            seen = seen || strcmp(fp->want[k][0], name) == 0;
        if (seen)
            continue;
        fp->want[fp->nwant][0] = name;
        fp->want[fp->nwant][1] = value;
        fp->nwant++;
    }
}

/* Reads one window's samples from @in into @a, counting what it accepts. */
static void fuzz_fill(struct fuzz_in *in, struct agg *a, int64_t *count, int64_t *nanos)
{
    size_t nsamples = fuzz_byte(in) % 8u;
    for (size_t s = 0; s < nsamples; s++) {
        uint64_t thread = fuzz_byte(in) % 4u;
        const char *task = fuzz_tasks[fuzz_byte(in) % 3u];
        int64_t n = fuzz_byte(in) % 8 + 1;
        size_t depth = fuzz_byte(in) % 8u;
        struct unwind_frame frames[8];
        for (size_t k = 0; k < depth; k++)
            frames[k] = fuzz_palette[fuzz_byte(in) % 16u];
        if (agg_add_in(a, frames, depth, 100 + thread, 0, fuzz_threads[thread], task, n,
                       n * 1000) == 0) {
            *count += n;
            *nanos += n * 1000;
        }
    }
}

/* Builds the case described by @in; false when a window could not be made. */
static bool fuzz_setup(struct fuzz_in *in, struct fuzz_case *c)
{
    uint8_t meta = fuzz_byte(in);
    size_t cap = (size_t)fuzz_byte(in) * 32u;
    c->m = (struct pprof_meta){.value_type = fuzz_value_types[meta & 3u],
                               .value_unit = "nanoseconds",
                               .period_ns = (int64_t)(meta >> 4) * 1000000,
                               .time_nanos = 1767225600000000000,
                               .duration_nanos = 2000000000,
                               .comment = (meta & 4u) ? "pyprofd fuzz" : NULL,
                               .max_bytes = cap};
    c->nparts = fuzz_byte(in) % FUZZ_PARTS + 1u;
    for (size_t k = 0; k < c->nparts; k++) {
        struct fuzz_part *fp = &c->part[k];
        uint8_t h = fuzz_byte(in);
        fp->ls = (struct labels){.v = fp->lab, .n = h & 7u, .cap = FUZZ_LABELS};
        fp->null_labels = (h & 8u) != 0;
        for (size_t i = 0; i < fp->ls.n; i++) {
            uint8_t b = fuzz_byte(in);
            /* labels own char *; the encoder only reads them */
            fp->lab[i].name = (char *)(uintptr_t)fuzz_name(b >> 4);
            fp->lab[i].value = (char *)(uintptr_t)fuzz_value(b & 15u);
        }
        if ((h & 16u) && k > 0) {
            fp->win = c->part[k - 1].win;
        } else {
            fp->win = c->nwin;
            if (agg_new(&fuzz_limits[(h >> 5) & 1u], &c->win[c->nwin]))
                return false;
            c->nwin++;
            fuzz_fill(in, c->win[fp->win], &c->count[fp->win], &c->nanos[fp->win]);
        }
        c->pp[k] =
            (struct pprof_part){.agg = c->win[fp->win], .labels = fp->null_labels ? NULL : &fp->ls};
    }
    for (size_t k = 0; k < c->nparts; k++)
        fuzz_expect(&c->part[k], c->win[c->part[k].win]);
    return true;
}

static const char *fuzz_str(const Perftools__Profiles__Profile *p, int64_t i)
{
    PYPROFD_ASSERT(i >= 0 && (uint64_t)i < p->n_string_table);
    return p->string_table[i];
}

/* The label @key of @s (at most one: pprof_test_check()), or NULL. */
static const Perftools__Profiles__Label *fuzz_label(const Perftools__Profiles__Profile *p,
                                                    const Perftools__Profiles__Sample *s,
                                                    const char *key)
{
    for (size_t i = 0; i < s->n_label; i++) {
        if (strcmp(fuzz_str(p, s->label[i]->key), key) == 0)
            return s->label[i];
    }
    return NULL;
}

/* Checks sample @s against window sample @as of part @fp, whose locations start at @loff. */
static void fuzz_check_sample(const Perftools__Profiles__Profile *p,
                              const Perftools__Profiles__Sample *s, const struct agg *a,
                              const struct agg_sample *as, size_t loff, const struct fuzz_part *fp)
{
    PYPROFD_ASSERT(s->n_value == 2 && s->value[0] == as->count && s->value[1] == as->nanos);
    PYPROFD_ASSERT(s->n_location_id == as->nlocations);
    for (size_t q = 0; q < s->n_location_id; q++) {
        const struct agg_location *al = agg_location(a, as->locations[q]);
        PYPROFD_ASSERT(s->location_id[q] == loff + as->locations[q] + 1);
        const Perftools__Profiles__Location *l = p->location[s->location_id[q] - 1];
        const Perftools__Profiles__Function *fn = p->function[l->line[0]->function_id - 1];
        const struct agg_function *af = agg_function(a, al->function);
        PYPROFD_ASSERT(l->line[0]->line == al->line);
        PYPROFD_ASSERT(strcmp(fuzz_str(p, fn->name), agg_string(a, af->name)) == 0);
        PYPROFD_ASSERT(strcmp(fuzz_str(p, fn->filename), agg_string(a, af->filename)) == 0);
    }

    const Perftools__Profiles__Label *l = fuzz_label(p, s, "thread_id");
    PYPROFD_ASSERT(l && l->str == 0 && l->num == (int64_t)as->thread_id);
    l = fuzz_label(p, s, "thread_name");
    PYPROFD_ASSERT(l && strcmp(fuzz_str(p, l->str), agg_string(a, as->thread_name)) == 0);
    l = fuzz_label(p, s, "task_name");
    PYPROFD_ASSERT(!as->task_name == !l);
    PYPROFD_ASSERT(!l || strcmp(fuzz_str(p, l->str), agg_string(a, as->task_name)) == 0);
    size_t own = as->task_name ? 3 : 2;
    if (s->n_label != own + fp->nwant) {
        fprintf(stderr, "fuzz_pprof_multi: sample has %zu labels, wants %zu + %zu\n", s->n_label,
                own, fp->nwant);
        PYPROFD_ASSERT(false);
    }
    for (size_t k = 0; k < fp->nwant; k++) {
        l = fuzz_label(p, s, fp->want[k][0]);
        PYPROFD_ASSERT(l && l->num == 0 && strcmp(fuzz_str(p, l->str), fp->want[k][1]) == 0);
    }
}

static int fuzz_strcmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* string_table is exactly the strings the profile may use (each once: pprof_test_check()). */
static void fuzz_check_strings(const Perftools__Profiles__Profile *p, const struct fuzz_case *c,
                               bool has_task)
{
    size_t cap = 16 + FUZZ_PARTS * (2 * FUZZ_LABELS);
    for (size_t w = 0; w < c->nwin; w++)
        cap += agg_string_count(c->win[w]);
    const char **want = alloc_calloc(cap, sizeof(*want));
    const char **have = alloc_calloc(p->n_string_table ? p->n_string_table : 1, sizeof(*have));
    PYPROFD_ASSERT(want && have);
    size_t n = 0;
    want[n++] = "";
    want[n++] = c->m.value_type;
    want[n++] = c->m.value_unit;
    want[n++] = "samples";
    want[n++] = "count";
    want[n++] = "thread_id";
    want[n++] = "thread_name";
    if (has_task)
        want[n++] = "task_name";
    if (c->m.comment)
        want[n++] = c->m.comment;
    for (size_t w = 0; w < c->nwin; w++) {
        for (size_t i = 0; i < agg_string_count(c->win[w]); i++)
            want[n++] = agg_string(c->win[w], (uint32_t)i);
    }
    for (size_t k = 0; k < c->nparts; k++) {
        for (size_t i = 0; i < c->part[k].nwant; i++) {
            want[n++] = c->part[k].want[i][0];
            want[n++] = c->part[k].want[i][1];
        }
    }
    PYPROFD_ASSERT(n <= cap);
    qsort(want, n, sizeof(*want), fuzz_strcmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u == 0 || strcmp(want[u - 1], want[i]) != 0)
            want[u++] = want[i];
    }
    for (size_t i = 0; i < p->n_string_table; i++)
        have[i] = p->string_table[i];
    qsort(have, p->n_string_table, sizeof(*have), fuzz_strcmp);
    bool same = u == p->n_string_table;
    for (size_t i = 0; same && i < u; i++)
        same = strcmp(want[i], have[i]) == 0;
    if (!same)
        fprintf(stderr, "fuzz_pprof_multi: string_table has %zu strings, wants %zu\n",
                p->n_string_table, u);
    PYPROFD_ASSERT(same);
    alloc_free(want);
    alloc_free(have);
}

static void fuzz_check(const Perftools__Profiles__Profile *p, const struct fuzz_case *c)
{
    char why[256] = "";
    int bad = pprof_test_check(p, why, sizeof(why));
    if (bad)
        fprintf(stderr, "fuzz_pprof_multi: profile breaks a consumer rule: %s\n", why);
    PYPROFD_ASSERT(bad == 0);

    PYPROFD_ASSERT(p->n_sample_type == 2 && p->period_type);
    PYPROFD_ASSERT(strcmp(fuzz_str(p, p->sample_type[1]->type), c->m.value_type) == 0);
    PYPROFD_ASSERT(strcmp(fuzz_str(p, p->period_type->type), c->m.value_type) == 0);
    PYPROFD_ASSERT(p->period == c->m.period_ns && p->time_nanos == c->m.time_nanos &&
                   p->duration_nanos == c->m.duration_nanos);
    PYPROFD_ASSERT(p->n_comment == (c->m.comment ? 1u : 0u));

    size_t nsamp = 0, nfn = 0, nloc = 0;
    bool has_task = false;
    for (size_t k = 0; k < c->nparts; k++) {
        const struct fuzz_part *fp = &c->part[k];
        const struct agg *a = c->win[fp->win];
        size_t n = agg_sample_count(a);
        PYPROFD_ASSERT(nsamp + n <= p->n_sample);
        int64_t count = 0, nanos = 0;
        for (size_t i = 0; i < n; i++) {
            const struct agg_sample *as = agg_sample(a, i);
            const Perftools__Profiles__Sample *s = p->sample[nsamp + i];
            fuzz_check_sample(p, s, a, as, nloc, fp);
            count += s->value[0];
            nanos += s->value[1];
            has_task = has_task || as->task_name;
        }
        /* what the window accepted, no more, no less */
        PYPROFD_ASSERT(count == c->count[fp->win] && nanos == c->nanos[fp->win]);
        nsamp += n;
        nfn += agg_function_count(a);
        nloc += agg_location_count(a);
    }
    PYPROFD_ASSERT(p->n_sample == nsamp && p->n_function == nfn && p->n_location == nloc);
    fuzz_check_strings(p, c, has_task);
}

/* A node of the flame graph's tree: the sum of its children is at most its value. */
static int64_t fuzz_flame_node(json_object *n, int depth)
{
    json_object *v = NULL, *c = NULL, *name = NULL;
    PYPROFD_ASSERT(json_object_object_get_ex(n, "n", &name) &&
                   json_object_is_type(name, json_type_string));
    PYPROFD_ASSERT(json_object_object_get_ex(n, "v", &v));
    int64_t value = json_object_get_int64(v), sum = 0;
    PYPROFD_ASSERT(value >= 0 && (value > 0 || depth < 2)); /* a part may have no samples */
    if (json_object_object_get_ex(n, "c", &c)) {
        for (size_t i = 0; i < json_object_array_length(c); i++)
            sum += fuzz_flame_node(json_object_array_get_idx(c, i), depth + 1);
        PYPROFD_ASSERT(sum <= value);
    }
    return value;
}

/*
 * The same parts as the call tree of the HTML views (pprof/flamegraph.h):
 * valid JSON, with no raw '<', whose root counts every sample of every part.
 */
static void fuzz_flame(const struct fuzz_case *c)
{
    static const char *const names[FUZZ_PARTS] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"};
    struct flame_part fp[FUZZ_PARTS];
    int64_t total = 0;
    for (size_t k = 0; k < c->nparts; k++) {
        fp[k] = (struct flame_part){.agg = c->pp[k].agg, .name = c->nparts > 1 ? names[k] : NULL};
        for (size_t i = 0; i < agg_sample_count(fp[k].agg); i++)
            total += agg_sample(fp[k].agg, i)->count > 0 ? agg_sample(fp[k].agg, i)->count : 0;
    }
    struct buf b;
    struct buf_stream bs = {.b = &b};
    buf_init(&b, 64u << 20);
    FILE *f = buf_fopen(&bs);
    PYPROFD_ASSERT(f);
    PYPROFD_ASSERT(flame_json_write(fp, c->nparts, "all", f) == 0);
    PYPROFD_ASSERT(fclose(f) == 0 && bs.err == 0);
    PYPROFD_ASSERT(!strchr(buf_str(&b), '<'));
    json_object *root = json_tokener_parse(buf_str(&b));
    PYPROFD_ASSERT(root);
    PYPROFD_ASSERT(fuzz_flame_node(root, 0) == total);
    json_object_put(root);
    buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_long_name[0]) {
        memset(fuzz_long_name, 'n', FUZZ_LONG);
        for (size_t i = 0; i + 2 <= FUZZ_LONG; i += 2)
            memcpy(fuzz_long_value + i, "\xc3\xa9", 2); /* UTF-8 all along */
    }
    struct fuzz_in in = {.p = data, .n = size};
    struct fuzz_case c = {0};
    if (fuzz_setup(&in, &c)) {
        uint8_t *gz = NULL;
        size_t len = 0;
        int err = pprof_build_multi(c.pp, c.nparts, &c.m, &gz, &len);
        PYPROFD_ASSERT(err == 0 || (err == -E2BIG && c.m.max_bytes));
        if (err == 0) {
            PYPROFD_ASSERT(c.m.max_bytes == 0 || len <= c.m.max_bytes);
            Perftools__Profiles__Profile *p = NULL;
            PYPROFD_ASSERT(pprof_test_decode(gz, len, &p) == 0);
            fuzz_check(p, &c);
            pprof_test_free(p);
            alloc_free(gz);
        }
        fuzz_flame(&c);
    }
    for (size_t w = 0; w < c.nwin; w++)
        agg_free(c.win[w]);
    return 0;
}
