/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/pprof/pprof_build.c: encode a window, gunzip and unpack it
 * with protobuf-c, and check it against the rules of go tool pprof, Parca and
 * Pyroscope, the window it came from, and a golden rendering.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/utf8.h"
#include "fixture.h"
#include "pprof/pprof_build.h"
#include "pprof_test.h"

#define GOLDEN "pprof/golden.txt"
#define GOLDEN_HEAD                                                                                \
    "# The fixed window of tests/support/pprof_test.c, encoded by pprof_build() and decoded.\n"    \
    "# Regenerate: PYPROFD_UPDATE_GOLDEN=1 build/tests/test_pprof_build; review the diff.\n"

struct fixture {
    struct agg *agg;
    Perftools__Profiles__Profile *prof;
};

static size_t in_use_before; /* alloc_in_use() before the test's setup */

static int pprof_build_setup(void **state)
{
    in_use_before = alloc_in_use();
    struct fixture *f = alloc_calloc(1, sizeof(*f));
    if (!f)
        return -1;
    if (agg_new(NULL, &f->agg)) {
        alloc_free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int pprof_build_teardown(void **state)
{
    struct fixture *f = *state;
    pprof_test_free(f->prof);
    agg_free(f->agg);
    alloc_free(f);
    return alloc_in_use() == in_use_before ? 0 : -1; /* no leak */
}

/* Encodes f->agg with @m, checks the rules, and decodes into f->prof. */
static void encode(struct fixture *f, const struct pprof_meta *m)
{
    uint8_t *gz = NULL;
    size_t len = 0;
    assert_int_equal(pprof_build(f->agg, m, &gz, &len), 0);
    assert_non_null(gz);
    assert_true(len > 18 && gz[0] == 0x1f && gz[1] == 0x8b);
    pprof_test_free(f->prof);
    f->prof = NULL;
    assert_int_equal(pprof_test_decode(gz, len, &f->prof), 0);
    alloc_free(gz);
    char why[256] = "";
    int err = pprof_test_check(f->prof, why, sizeof(why));
    if (err)
        fail_msg("profile breaks a rule: %s", why);
}

static void encode_fixed(struct fixture *f)
{
    assert_int_equal(pprof_test_fill(f->agg), 0);
    struct pprof_meta m = pprof_test_meta();
    encode(f, &m);
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t idx)
{
    assert_true(idx >= 0 && (size_t)idx < p->n_string_table);
    return p->string_table[idx];
}

static const Perftools__Profiles__Function *loc_function(const Perftools__Profiles__Profile *p,
                                                         uint64_t loc_id)
{
    const Perftools__Profiles__Location *l = p->location[loc_id - 1];
    assert_int_equal(l->n_line, 1);
    return p->function[l->line[0]->function_id - 1];
}

/* The label @key of @s, or NULL. */
static const Perftools__Profiles__Label *
label(const Perftools__Profiles__Profile *p, const Perftools__Profiles__Sample *s, const char *key)
{
    const Perftools__Profiles__Label *found = NULL;
    for (size_t i = 0; i < s->n_label; i++) {
        if (strcmp(str(p, s->label[i]->key), key) == 0) {
            assert_null(found); /* one value per key */
            found = s->label[i];
        }
    }
    return found;
}

static void test_pprof_build__mirrors_the_window(void **state)
{
    struct fixture *f = *state;
    encode_fixed(f);
    const Perftools__Profiles__Profile *p = f->prof;
    const struct agg *a = f->agg;

    /* the window's strings first, in id order, then a few more */
    size_t nstr = agg_string_count(a);
    assert_true(p->n_string_table > nstr);
    assert_string_equal(p->string_table[0], "");
    for (size_t i = 0; i < nstr; i++)
        assert_string_equal(p->string_table[i], agg_string(a, (uint32_t)i));

    assert_int_equal(p->n_function, agg_function_count(a));
    for (size_t i = 0; i < p->n_function; i++) {
        const Perftools__Profiles__Function *fn = p->function[i];
        const struct agg_function *af = agg_function(a, i);
        assert_int_equal(fn->id, i + 1);
        assert_int_equal(fn->name, af->name);
        assert_int_equal(fn->filename, af->filename);
        assert_int_equal(fn->start_line, af->start_line);
        assert_int_equal(fn->system_name, af->system_name == af->name ? 0 : af->system_name);
    }
    assert_int_equal(p->n_location, agg_location_count(a));
    for (size_t i = 0; i < p->n_location; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        const struct agg_location *al = agg_location(a, i);
        assert_int_equal(l->id, i + 1);
        assert_int_equal(l->mapping_id, 1);
        assert_int_equal(l->address, 0);
        assert_int_equal(l->n_line, 1);
        assert_int_equal(l->line[0]->function_id, al->function + 1);
        assert_int_equal(l->line[0]->line, al->line);
        assert_int_equal(l->line[0]->column, al->column);
    }
    assert_int_equal(p->n_sample, agg_sample_count(a));
    for (size_t i = 0; i < p->n_sample; i++) {
        const struct agg_sample *as = agg_sample(a, i);
        const Perftools__Profiles__Sample *s = p->sample[i];
        assert_int_equal(s->n_location_id, as->nlocations);
        for (size_t k = 0; k < s->n_location_id; k++)
            assert_int_equal(s->location_id[k], as->locations[k] + 1);
        assert_int_equal(s->n_value, 2);
        assert_int_equal(s->value[0], as->count);
        assert_int_equal(s->value[1], as->nanos);
    }

    /* one synthetic mapping that says there is nothing to symbolize */
    assert_int_equal(p->n_mapping, 1);
    const Perftools__Profiles__Mapping *m = p->mapping[0];
    assert_int_equal(m->id, 1);
    assert_true(m->has_functions && m->has_filenames && m->has_line_numbers);
    assert_false(m->has_inline_frames);
    assert_int_equal(m->filename, 0);
}

static void test_pprof_build__sample_types_period_and_times(void **state)
{
    struct fixture *f = *state;
    encode_fixed(f);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample_type, 2);
    assert_string_equal(str(p, p->sample_type[0]->type), "samples");
    assert_string_equal(str(p, p->sample_type[0]->unit), "count");
    assert_string_equal(str(p, p->sample_type[1]->type), "cpu");
    assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
    assert_non_null(p->period_type);
    assert_string_equal(str(p, p->period_type->type), "cpu");
    assert_string_equal(str(p, p->period_type->unit), "nanoseconds");
    assert_int_equal(p->period, 10000000);
    assert_int_equal(p->time_nanos, 1767225600000000000);
    assert_int_equal(p->duration_nanos, 10000000000);
    assert_int_equal(p->default_sample_type, 0); /* consumers take the last: cpu */
    assert_int_equal(p->n_comment, 1);
    assert_string_equal(str(p, p->comment[0]), "pyprofd test profile");
}

static void test_pprof_build__labels(void **state)
{
    struct fixture *f = *state;
    encode_fixed(f);
    const Perftools__Profiles__Profile *p = f->prof;
    size_t tasks = 0;
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        const struct agg_sample *as = agg_sample(f->agg, i);

        const Perftools__Profiles__Label *tid = label(p, s, "thread_id");
        assert_non_null(tid);
        assert_int_equal(tid->str, 0); /* numeric */
        assert_int_equal(tid->num, (int64_t)as->thread_id);

        const Perftools__Profiles__Label *name = label(p, s, "thread_name");
        assert_non_null(name);
        assert_int_equal(name->num, 0);
        assert_true(str(p, name->str)[0] != '\0');
        if (as->thread_id == 104)
            assert_string_equal(str(p, name->str), "unknown");

        const Perftools__Profiles__Label *task = label(p, s, "task_name");
        if (as->task_name) {
            assert_non_null(task);
            assert_true(strncmp(str(p, task->str), "fetch-", 6) == 0);
            tasks++;
        } else {
            assert_null(task);
        }
        assert_int_equal(s->n_label, as->task_name ? 3 : 2);
    }
    assert_int_equal(tasks, 2);
}

/*
 * A sub-interpreter's samples: the same thread and stack in the main
 * interpreter and in interpreter 2 are two samples, and only the second has
 * an interpreter_id label (numeric); a repeat counts in its own interpreter.
 */
static void test_pprof_build__sub_interpreter_label(void **state)
{
    struct fixture *f = *state;
    const struct unwind_frame fr[] = {{.kind = UNWIND_FRAME_PYTHON,
                                       .function = "work",
                                       .file = "app.py",
                                       .first_line = 1,
                                       .code_raddr = 1,
                                       .pos = {2, 2, 0, 1}}};
    assert_int_equal(agg_add_in(f->agg, fr, 1, 7, 0, "main", NULL, 1, 10), 0);
    assert_int_equal(agg_add_in(f->agg, fr, 1, 7, 2, "main", NULL, 1, 10), 0);
    assert_int_equal(agg_repeat_in(f->agg, 7, 2, "main", 1, 10), 0);
    assert_int_equal(agg_repeat_in(f->agg, 7, 0, "main", 1, 10), -ENOENT); /* last was in 2 */
    struct pprof_meta m = {.value_type = "wall", .value_unit = "nanoseconds"};
    encode(f, &m);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample, 2);
    for (size_t i = 0; i < 2; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        const Perftools__Profiles__Label *in = label(p, s, "interpreter_id");
        if (agg_sample(f->agg, i)->interp_id == 0) {
            assert_null(in);
            assert_int_equal(s->value[0], 1);
        } else {
            assert_non_null(in);
            assert_int_equal(in->str, 0);
            assert_int_equal(in->num, 2);
            assert_int_equal(s->value[0], 2);
        }
    }
}

/*
 * Samples in a trace's span: labels trace_id and span_id (strings, the ids in
 * lowercase hex) on those samples only; a window without spans adds neither
 * key.
 */
static void test_pprof_build__span_labels(void **state)
{
    struct fixture *f = *state;
    const struct unwind_frame fr[] = {{.kind = UNWIND_FRAME_PYTHON,
                                       .function = "handle",
                                       .file = "app.py",
                                       .first_line = 1,
                                       .code_raddr = 1,
                                       .pos = {2, 2, 0, 1}}};
    struct sample_span sp = {.set = true};
    for (unsigned i = 0; i < 16; i++)
        sp.trace_id[i] = (uint8_t)(0xf0 + i);
    for (unsigned i = 0; i < 8; i++)
        sp.span_id[i] = (uint8_t)(0x0a * i);
    assert_int_equal(agg_add_span(f->agg, fr, 1, 7, 0, "main", NULL, &sp, 1, 10), 0);
    assert_int_equal(agg_repeat_in(f->agg, 7, 0, "main", 1, 10), 0);
    assert_int_equal(agg_add_span(f->agg, fr, 1, 7, 0, "main", NULL, NULL, 1, 10), 0);
    struct pprof_meta m = {.value_type = "wall", .value_unit = "nanoseconds"};
    encode(f, &m);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample, 2);
    const Perftools__Profiles__Sample *in = p->sample[0], *out = p->sample[1];
    assert_int_equal(in->value[0], 2);
    const Perftools__Profiles__Label *trace = label(p, in, "trace_id");
    const Perftools__Profiles__Label *span = label(p, in, "span_id");
    assert_non_null(trace);
    assert_non_null(span);
    assert_int_equal(trace->num, 0);
    assert_int_equal(span->num, 0);
    assert_string_equal(str(p, trace->str), "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
    assert_string_equal(str(p, span->str), "000a141e28323c46");
    assert_int_equal(in->n_label, 4); /* thread_id, thread_name, trace_id, span_id */
    assert_null(label(p, out, "trace_id"));
    assert_null(label(p, out, "span_id"));
    assert_int_equal(out->n_label, 2);
    assert_int_equal(out->value[0], 1);
    assert_int_equal(in->location_id[0], out->location_id[0]);

    /* no span in the window: no key */
    agg_reset(f->agg);
    assert_int_equal(agg_add_span(f->agg, fr, 1, 7, 0, "main", NULL, NULL, 1, 10), 0);
    encode(f, &m);
    p = f->prof;
    for (size_t i = 0; i < p->n_string_table; i++) {
        assert_true(strcmp(p->string_table[i], "trace_id") != 0);
        assert_true(strcmp(p->string_table[i], "span_id") != 0);
    }
}

/* Finds the one sample of @thread whose leaf is @leaf at @line. */
static const Perftools__Profiles__Sample *
find_sample(const Perftools__Profiles__Profile *p, int64_t thread, const char *leaf, int64_t line)
{
    const Perftools__Profiles__Sample *found = NULL;
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        if (label(p, s, "thread_id")->num != thread || s->n_location_id == 0)
            continue;
        const Perftools__Profiles__Location *l = p->location[s->location_id[0] - 1];
        if (strcmp(str(p, loc_function(p, l->id)->name), leaf) == 0 && l->line[0]->line == line) {
            assert_null(found);
            found = s;
        }
    }
    assert_non_null(found);
    return found;
}

static void test_pprof_build__stacks_leaf_first_values_summed(void **state)
{
    struct fixture *f = *state;
    encode_fixed(f);
    const Perftools__Profiles__Profile *p = f->prof;

    /* 3 coalesced repeats + 1 after another stack: one sample of 4 */
    const Perftools__Profiles__Sample *s = find_sample(p, 101, "compute", 5);
    assert_int_equal(s->value[0], 4);
    assert_int_equal(s->value[1], 40000000);
    static const char *const stack[] = {"compute", "Server.handle", "main", "<module>"};
    assert_int_equal(s->n_location_id, 4);
    for (size_t k = 0; k < 4; k++)
        assert_string_equal(str(p, loc_function(p, s->location_id[k])->name), stack[k]);
    /* same function, other line: another location, another sample */
    const Perftools__Profiles__Sample *s7 = find_sample(p, 101, "compute", 7);
    assert_int_equal(s7->value[0], 1);
    assert_true(s7->location_id[0] != s->location_id[0]);
    assert_int_equal(loc_function(p, s7->location_id[0])->id,
                     loc_function(p, s->location_id[0])->id);
    assert_int_equal(p->location[s->location_id[0] - 1]->line[0]->column, 12); /* 0-based 11 */

    int64_t count = 0, nanos = 0;
    for (size_t i = 0; i < p->n_sample; i++) {
        count += p->sample[i]->value[0];
        nanos += p->sample[i]->value[1];
    }
    assert_int_equal(count, 12);
    assert_int_equal(nanos, 120000000);
}

static void test_pprof_build__system_name_only_when_it_differs(void **state)
{
    struct fixture *f = *state;
    encode_fixed(f);
    const Perftools__Profiles__Profile *p = f->prof;
    size_t seen = 0;
    for (size_t i = 0; i < p->n_function; i++) {
        const Perftools__Profiles__Function *fn = p->function[i];
        const char *name = str(p, fn->name);
        if (strcmp(name, "Server.handle") == 0) {
            assert_string_equal(str(p, fn->system_name), "handle");
            seen++;
        } else if (strcmp(name, "<module>") == 0 || strcmp(name, "<GC>") == 0 ||
                   strcmp(name, "compute") == 0) {
            assert_int_equal(fn->system_name, 0);
            seen++;
        }
    }
    assert_int_equal(seen, 4);
}

/* Native frames: an address each, and their files as mappings 2.. with build ids. */
static void test_pprof_build__native_frames_have_addresses_and_mappings(void **state)
{
    struct fixture *f = *state;
    static const struct frame_mapping libz = {.file = "/usr/lib/libz.so.1",
                                              .build_id = "3466",
                                              .start = 0x7f0000000000,
                                              .limit = 0x7f0000020000};
    static const struct frame_mapping crypto = {.file = "/usr/lib/libcrypto.so.3",
                                                .build_id = "",
                                                .start = 0x7f1000000000,
                                                .limit = 0x7f1000400000,
                                                .offset = 0x1000};
    struct unwind_frame c[] = {
        {.kind = UNWIND_FRAME_C,
         .function = "libz.so.1+0x4e80",
         .file = libz.file,
         .pc = 0x7f0000004ece,
         .mapping = &libz},
        {.kind = UNWIND_FRAME_C,
         .function = "deflate",
         .file = libz.file,
         .pc = 0x7f000000769c,
         .mapping = &libz},
        {.kind = UNWIND_FRAME_PYTHON,
         .function = "deflate_loop",
         .file = "/w.py",
         .first_line = 3,
         .pos = {4, 4, 0, 9}},
        {.kind = UNWIND_FRAME_C,
         .function = "Py_RunMain",
         .file = "/usr/bin/python3",
         .pc = 0x4376aa},
    };
    struct unwind_frame d[] = {
        {.kind = UNWIND_FRAME_C,
         .function = "SHA256_Update",
         .file = crypto.file,
         .pc = 0x7f10003aa045,
         .mapping = &crypto},
        {.kind = UNWIND_FRAME_C,
         .function = "deflate",
         .file = libz.file,
         .pc = 0x7f0000007700,
         .mapping = &libz},
    };
    assert_int_equal(agg_add_in(f->agg, c, 4, 1, 0, "main", NULL, 1, 10), 0);
    assert_int_equal(agg_add_in(f->agg, d, 2, 1, 0, "main", NULL, 1, 10), 0);
    assert_int_equal(agg_mapping_count(f->agg), 2); /* libz once */
    struct pprof_meta m = pprof_test_meta();
    encode(f, &m);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_mapping, 3);
    assert_int_equal(p->mapping[0]->id, 1);
    const Perftools__Profiles__Mapping *mz = p->mapping[1], *mc = p->mapping[2];
    assert_int_equal(mz->id, 2);
    assert_string_equal(str(p, mz->filename), "/usr/lib/libz.so.1");
    assert_string_equal(str(p, mz->build_id), "3466");
    assert_int_equal(mz->memory_start, 0x7f0000000000);
    assert_int_equal(mz->memory_limit, 0x7f0000020000);
    assert_string_equal(str(p, mc->filename), "/usr/lib/libcrypto.so.3");
    assert_string_equal(str(p, mc->build_id), "");
    assert_int_equal(mc->file_offset, 0x1000);
    /* one location per address: two of deflate, each in libz's mapping */
    size_t deflates = 0;
    for (size_t i = 0; i < p->n_location; i++) {
        const Perftools__Profiles__Location *l = p->location[i];
        const char *fn = str(p, loc_function(p, l->id)->name);
        if (strcmp(fn, "deflate") == 0) {
            deflates++;
            assert_int_equal(l->mapping_id, 2);
            assert_true(l->address == 0x7f000000769c || l->address == 0x7f0000007700);
        } else if (strcmp(fn, "SHA256_Update") == 0) {
            assert_int_equal(l->mapping_id, 3);
            assert_int_equal(l->address, 0x7f10003aa045);
        } else if (strcmp(fn, "Py_RunMain") == 0) {
            assert_int_equal(l->mapping_id, 1); /* no file known: the common mapping */
            assert_int_equal(l->address, 0x4376aa);
        } else if (strcmp(fn, "deflate_loop") == 0) {
            assert_int_equal(l->mapping_id, 1);
            assert_int_equal(l->address, 0);
        }
        /* a C name is its own system name: "libz.so.1+0x4e80" is not cut at its dots */
        assert_int_equal(loc_function(p, l->id)->system_name, 0);
    }
    assert_int_equal(deflates, 2);
}

static void test_pprof_build__golden(void **state)
{
    struct fixture *f = *state;
    encode_fixed(f);

    size_t cap = 64u << 10;
    char *text = alloc_malloc(cap);
    assert_non_null(text);
    FILE *out = fmemopen(text, cap, "w");
    assert_non_null(out);
    fputs(GOLDEN_HEAD, out);
    pprof_test_render(f->prof, out);
    long n = ftell(out);
    assert_int_equal(fclose(out), 0);
    assert_true(n > 0 && (size_t)n < cap - 1);
    text[n] = '\0';

    if (getenv("PYPROFD_UPDATE_GOLDEN")) {
        char path[4096];
        FILE *g = fopen(fixture_path(GOLDEN, path, sizeof(path)), "w");
        assert_non_null(g);
        assert_int_equal(fwrite(text, 1, (size_t)n, g), (size_t)n);
        assert_int_equal(fclose(g), 0);
    }
    size_t glen = 0;
    uint8_t *golden = fixture_load(GOLDEN, &glen);
    if (!golden)
        fail_msg("cannot read tests/fixtures/" GOLDEN);
    if (strcmp((const char *)golden, text) != 0)
        fprintf(stderr, "rendered:\n%s", text);
    assert_string_equal((const char *)golden, text);
    alloc_free(golden);
    alloc_free(text);
}

static void test_pprof_build__empty_window(void **state)
{
    struct fixture *f = *state;
    struct pprof_meta m = {.value_type = "wall", .value_unit = "nanoseconds"};
    encode(f, &m);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample, 0);
    assert_int_equal(p->n_function, 0);
    assert_int_equal(p->n_location, 0);
    assert_int_equal(p->n_comment, 0);
    assert_int_equal(p->n_sample_type, 2);
    assert_string_equal(str(p, p->sample_type[1]->type), "wall");
    /* no label was used, so no label key was added */
    for (size_t i = 0; i < p->n_string_table; i++)
        assert_true(strcmp(p->string_table[i], "task_name") != 0);
}

/* Strings the encoder adds are not repeated when the window already has them. */
static void test_pprof_build__added_strings_are_deduplicated(void **state)
{
    struct fixture *f = *state;
    const struct unwind_frame fr[] = {
        {.kind = UNWIND_FRAME_PYTHON,
         .function = "cpu",
         .file = "thread_id",
         .first_line = 1,
         .code_raddr = 1,
         .pos = {2, 2, 0, 1}},
        {.kind = UNWIND_FRAME_PYTHON,
         .function = "samples",
         .file = "nanoseconds",
         .first_line = 1,
         .code_raddr = 2,
         .pos = {3, 3, 0, 1}},
    };
    assert_int_equal(agg_add_in(f->agg, fr, 2, 7, 0, "count", "thread_name", 1, 5), 0);
    size_t nstr = agg_string_count(f->agg);
    struct pprof_meta m = {.value_type = "cpu", .value_unit = "nanoseconds", .comment = "count"};
    encode(f, &m); /* pprof_test_check() rejects repeated strings */
    /* only "task_name" was missing */
    assert_int_equal(f->prof->n_string_table, nstr + 1);
    assert_string_equal(f->prof->string_table[nstr], "task_name");
}

static void test_pprof_build__rejects_bad_meta(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(pprof_test_fill(f->agg), 0);
    uint8_t *out = NULL;
    size_t len = 0;
    struct pprof_meta m = pprof_test_meta();
    m.value_type = NULL;
    assert_int_equal(pprof_build(f->agg, &m, &out, &len), -EINVAL);
    m = pprof_test_meta();
    m.value_unit = "";
    assert_int_equal(pprof_build(f->agg, &m, &out, &len), -EINVAL);
    m = pprof_test_meta();
    m.period_ns = -1;
    assert_int_equal(pprof_build(f->agg, &m, &out, &len), -EINVAL);
    assert_null(out);
}

static void test_pprof_build__respects_size_cap(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(pprof_test_fill(f->agg), 0);
    struct pprof_meta m = pprof_test_meta();
    uint8_t *out = NULL;
    size_t len = 0;
    assert_int_equal(pprof_build(f->agg, &m, &out, &len), 0);
    alloc_free(out);
    out = NULL;

    m.max_bytes = 200; /* the serialized profile is larger, the gzip smaller */
    assert_int_equal(pprof_build(f->agg, &m, &out, &len), -E2BIG);
    m.max_bytes = len - 1; /* the gzip does not fit */
    assert_int_equal(pprof_build(f->agg, &m, &out, &len), -E2BIG);
    assert_null(out);
}

/* Fails each allocation of a build in turn: -ENOMEM, nothing leaked. */
static void test_pprof_build__survives_allocation_failures(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(pprof_test_fill(f->agg), 0);
    struct pprof_meta m = pprof_test_meta();
    bool done = false;
    for (uint64_t nth = 1; !done; nth++) {
        assert_true(nth < 100);
        size_t before = alloc_in_use();
        uint8_t *out = NULL;
        size_t len = 0;
        alloc_fail_nth(nth);
        int err = pprof_build(f->agg, &m, &out, &len);
        alloc_fail_nth(0);
        if (err == 0) {
            alloc_free(out);
            done = true;
        } else {
            assert_int_equal(err, -ENOMEM);
            assert_null(out);
        }
        assert_int_equal(alloc_in_use(), before);
    }
}

/* Two windows in one profile: tables concatenated, each sample with its part's labels. */
static void test_pprof_build__merges_windows_with_their_labels(void **state)
{
    struct fixture *f = *state;
    struct agg *second = NULL;
    assert_int_equal(agg_new(NULL, &second), 0);
    assert_int_equal(pprof_test_fill(f->agg), 0);
    assert_int_equal(pprof_test_fill(second), 0);
    /* the second window also gets a stack the first does not have */
    struct unwind_frame extra = {.kind = UNWIND_FRAME_PYTHON,
                                 .function = "only_in_two",
                                 .file = "two.py",
                                 .first_line = 7,
                                 .code_raddr = 0x1234,
                                 .pos = {.line = 7, .end_line = 7, .col = 4, .end_col = 9}};
    assert_int_equal(agg_add_in(second, &extra, 1, 99, 0, "t", NULL, 1, 10), 0);

    struct label l1[] = {{.name = (char *)"job", .value = (char *)"a"},
                         {.name = (char *)"pid", .value = (char *)"1"},
                         {.name = (char *)"thread_name", .value = (char *)"clash"},
                         {.name = (char *)"unset", .value = (char *)""}};
    struct label l2[] = {{.name = (char *)"pid", .value = (char *)"2"}};
    struct labels ls1 = {.v = l1, .n = 4, .cap = 4};
    struct labels ls2 = {.v = l2, .n = 1, .cap = 1};
    struct pprof_part parts[] = {{.agg = f->agg, .labels = &ls1}, {.agg = second, .labels = &ls2}};
    struct pprof_meta m = pprof_test_meta();
    uint8_t *gz = NULL;
    size_t len = 0;
    assert_int_equal(pprof_build_multi(parts, 2, &m, &gz, &len), 0);
    assert_int_equal(pprof_test_decode(gz, len, &f->prof), 0);
    alloc_free(gz);
    char why[256] = "";
    if (pprof_test_check(f->prof, why, sizeof(why)))
        fail_msg("profile breaks a rule: %s", why);

    const Perftools__Profiles__Profile *p = f->prof;
    size_t n1 = agg_sample_count(f->agg), n2 = agg_sample_count(second);
    assert_int_equal(p->n_sample, n1 + n2);
    assert_int_equal(p->n_function, agg_function_count(f->agg) + agg_function_count(second));
    assert_int_equal(p->n_location, agg_location_count(f->agg) + agg_location_count(second));
    bool saw_extra = false;
    for (size_t i = 0; i < p->n_sample; i++) {
        const Perftools__Profiles__Sample *s = p->sample[i];
        const Perftools__Profiles__Label *pid = label(p, s, "pid");
        assert_non_null(pid);
        assert_string_equal(str(p, pid->str), i < n1 ? "1" : "2");
        const Perftools__Profiles__Label *job = label(p, s, "job");
        if (i < n1) {
            assert_non_null(job);
            assert_string_equal(str(p, job->str), "a");
        } else {
            assert_null(job);
        }
        assert_null(label(p, s, "unset"));
        const Perftools__Profiles__Label *tn = label(p, s, "thread_name"); /* never twice */
        if (tn)
            assert_string_not_equal(str(p, tn->str), "clash");
        const Perftools__Profiles__Function *fn = loc_function(p, s->location_id[0]);
        if (strcmp(str(p, fn->name), "only_in_two") == 0) {
            assert_true(i >= n1);
            assert_string_equal(str(p, fn->filename), "two.py");
            saw_extra = true;
        }
    }
    assert_true(saw_extra);
    agg_free(second);
}

/* Builds @a nparts parts, decodes, checks the consumer rules; the profile goes to f->prof. */
static void encode_parts(struct fixture *f, const struct pprof_part *parts, size_t nparts)
{
    struct pprof_meta m = pprof_test_meta();
    uint8_t *gz = NULL;
    size_t len = 0;
    assert_int_equal(pprof_build_multi(parts, nparts, &m, &gz, &len), 0);
    pprof_test_free(f->prof);
    f->prof = NULL;
    assert_int_equal(pprof_test_decode(gz, len, &f->prof), 0);
    alloc_free(gz);
    char why[256] = "";
    if (pprof_test_check(f->prof, why, sizeof(why)))
        fail_msg("profile breaks a rule: %s", why);
}

static bool has_string(const Perftools__Profiles__Profile *p, const char *s)
{
    for (size_t i = 0; i < p->n_string_table; i++) {
        if (strcmp(p->string_table[i], s) == 0)
            return true;
    }
    return false;
}

/*
 * Checks that samples [@a from, @a from + @a n) of f->prof are window @a a's
 * samples in order and that each carries, besides its thread labels, exactly
 * the (name, value) pairs of @a want (NULL-terminated, name then value).
 */
static void check_part(const Perftools__Profiles__Profile *p, size_t from, const struct agg *a,
                       const char *const *want)
{
    size_t nwant = 0;
    while (want[2 * nwant])
        nwant++;
    size_t n = agg_sample_count(a);
    assert_true(from + n <= p->n_sample);
    for (size_t i = 0; i < n; i++) {
        const Perftools__Profiles__Sample *s = p->sample[from + i];
        const struct agg_sample *as = agg_sample(a, i);
        assert_int_equal(s->value[0], as->count);
        assert_int_equal(s->value[1], as->nanos);
        assert_int_equal(label(p, s, "thread_id")->num, (int64_t)as->thread_id);
        assert_string_equal(str(p, label(p, s, "thread_name")->str),
                            agg_string(a, as->thread_name));
        size_t thread_labels = as->task_name ? 3 : 2;
        assert_int_equal(s->n_label, thread_labels + nwant);
        for (size_t k = 0; k < nwant; k++) {
            const Perftools__Profiles__Label *l = label(p, s, want[2 * k]);
            if (!l)
                fail_msg("sample %zu has no label '%s'", from + i, want[2 * k]);
            assert_int_equal(l->num, 0);
            assert_string_equal(str(p, l->str), want[2 * k + 1]);
        }
    }
}

/* Adds one sample of thread @a tid with a one-frame stack in @a fn to @a a. */
static void add_one(struct agg *a, const char *fn, uint64_t tid, int64_t count)
{
    const struct unwind_frame fr = {.kind = UNWIND_FRAME_PYTHON,
                                    .function = fn,
                                    .file = "one.py",
                                    .first_line = 1,
                                    .pos = {.line = 2, .end_line = 2, .col = 0, .end_col = 1}};
    assert_int_equal(agg_add_in(a, &fr, 1, tid, 0, "worker", NULL, count, count * 1000), 0);
}

#define LABELS(arr)                                                                                \
    {                                                                                              \
        .v = (arr), .n = sizeof(arr) / sizeof((arr)[0]), .cap = 0                                  \
    }
#define L(n_, v_)                                                                                  \
    {                                                                                              \
        .name = (char *)(n_), .value = (char *)(v_)                                                \
    }

/* The README's quick start: one idle target, so one empty window, with the target's labels. */
static void test_pprof_build__empty_labelled_part_alone(void **state)
{
    struct fixture *f = *state;
    struct label l[] = {L("pid", "4242"), L("service_name", "idle"), L("comm", "python3")};
    struct labels ls = LABELS(l);
    struct pprof_part part = {.agg = f->agg, .labels = &ls};
    encode_parts(f, &part, 1);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample, 0);
    assert_int_equal(p->n_function, 0);
    assert_int_equal(p->n_location, 0);
    /* labels no sample carries are not written, nor are their strings */
    for (size_t i = 0; i < 3; i++) {
        assert_false(has_string(p, l[i].name));
        assert_false(has_string(p, l[i].value));
    }
}

/*
 * Empty parts first, between and last (with 3, 5 and 2 labels) among parts
 * with 2, 1 and 0 labels: each sample carries its own part's labels and no one
 * else's, and the empty parts leave no sample and no label string behind.
 */
static void test_pprof_build__empty_parts_among_labelled_parts(void **state)
{
    struct fixture *f = *state;
    struct agg *w[6] = {NULL};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(agg_new(NULL, &w[i]), 0);
    /* w[0], w[2], w[5]: empty */
    assert_int_equal(pprof_test_fill(w[1]), 0);
    add_one(w[3], "three", 31, 2);
    add_one(w[3], "three_b", 32, 1);
    add_one(w[4], "four", 41, 5);

    struct label l0[] = {L("pid", "10"), L("job", "empty_first"), L("zone", "z0")};
    struct label l1[] = {L("job", "fixed"), L("pid", "11")};
    struct label l2[] = {L("gone", "empty_middle"), L("pid", "12"), L("job", "jm"), L("x", "y"),
                         L("w", "v")};
    struct label l3[] = {L("pid", "13")};
    struct label l5[] = {L("pid", "15"), L("job", "empty_last")};
    struct labels ls0 = LABELS(l0), ls1 = LABELS(l1), ls2 = LABELS(l2), ls3 = LABELS(l3),
                  ls5 = LABELS(l5);
    struct labels none = {0};
    const struct pprof_part parts[] = {
        {.agg = w[0], .labels = &ls0},  {.agg = w[1], .labels = &ls1},
        {.agg = w[2], .labels = &ls2},  {.agg = w[3], .labels = &ls3},
        {.agg = w[4], .labels = &none}, {.agg = w[5], .labels = &ls5},
    };
    encode_parts(f, parts, 6);
    const Perftools__Profiles__Profile *p = f->prof;

    size_t n1 = agg_sample_count(w[1]), n3 = agg_sample_count(w[3]);
    assert_int_equal(n3, 2);
    assert_int_equal(p->n_sample, n1 + n3 + 1);
    check_part(p, 0, w[1], (const char *const[]){"job", "fixed", "pid", "11", NULL});
    check_part(p, n1, w[3], (const char *const[]){"pid", "13", NULL});
    check_part(p, n1 + n3, w[4], (const char *const[]){NULL});

    /* "pid" and "job" are used by other parts; the rest only by empty ones */
    static const char *const unused[] = {"10", "empty_first", "zone", "z0", "gone", "empty_middle",
                                         "12", "jm",          "x",    "y",  "w",    "v",
                                         "15", "empty_last"};
    for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++) {
        if (has_string(p, unused[i]))
            fail_msg("string '%s' of an empty part was written", unused[i]);
    }
    /* every window's tables are still there, in part order */
    size_t nfn = 0;
    for (size_t i = 0; i < 6; i++)
        nfn += agg_function_count(w[i]);
    assert_int_equal(p->n_function, nfn);
    for (size_t i = 0; i < 6; i++)
        agg_free(w[i]);
}

/*
 * A window whose every sample was dropped at a cap has tables but no sample:
 * it is an empty part like any other (its tables kept, its labels not).
 */
static void test_pprof_build__part_with_every_sample_dropped(void **state)
{
    struct fixture *f = *state;
    struct agg_limits lim = {.stack_slots = 1};
    struct agg *dropped = NULL;
    assert_int_equal(agg_new(&lim, &dropped), 0);
    const struct unwind_frame fr[2] = {
        {.kind = UNWIND_FRAME_PYTHON, .function = "leaf", .file = "d.py", .first_line = 1},
        {.kind = UNWIND_FRAME_PYTHON, .function = "root", .file = "d.py", .first_line = 9},
    };
    assert_int_equal(agg_add_in(dropped, fr, 2, 7, 0, "t", NULL, 1, 1000), -E2BIG);
    assert_int_equal(agg_sample_count(dropped), 0);
    assert_true(agg_location_count(dropped) > 0);
    assert_int_equal(agg_stats(dropped).dropped, 1);
    add_one(f->agg, "kept", 8, 3);

    struct label ld[] = {L("pid", "1"), L("job", "dropped_all")};
    struct label lk[] = {L("pid", "2")};
    struct labels lsd = LABELS(ld), lsk = LABELS(lk);
    const struct pprof_part parts[] = {{.agg = dropped, .labels = &lsd},
                                       {.agg = f->agg, .labels = &lsk},
                                       {.agg = dropped, .labels = &lsd}};
    encode_parts(f, parts, 3);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample, 1);
    check_part(p, 0, f->agg, (const char *const[]){"pid", "2", NULL});
    assert_int_equal(p->n_location, 2 * agg_location_count(dropped) + agg_location_count(f->agg));
    /* the kept sample's location is found past the first window's */
    uint64_t loc = p->sample[0]->location_id[0];
    assert_int_equal(loc, agg_location_count(dropped) + 1);
    assert_string_equal(str(p, loc_function(p, loc)->name), "kept");
    assert_false(has_string(p, "dropped_all"));
    assert_false(has_string(p, "1"));
    assert_false(has_string(p, "job"));
    agg_free(dropped);
}

/*
 * A label set made by hand may break labels.h's rules: names out of order or
 * repeated, empty names or values, the encoder's own names. Only the first
 * label of each name that can be written is, on every sample of its part.
 */
static void test_pprof_build__part_labels_first_of_each_name(void **state)
{
    struct fixture *f = *state;
    add_one(f->agg, "a", 1, 1);
    add_one(f->agg, "b", 2, 2);
    struct agg *other = NULL;
    assert_int_equal(agg_new(NULL, &other), 0);
    add_one(other, "c", 3, 3);

    struct label l1[] = {L("pid", "1"),       L("job", ""),         L("job", "x"),
                         L("pid", "2"),       L("", "noname"),      L("zone", "\xe2\x82\xac"),
                         L("task_name", "t"), L("thread_id", "99"), L("job", "y"),
                         L("empty", ""),      L("nul", NULL),       L(NULL, "nul")};
    struct label l2[] = {L("zone", "b"), L("pid", "3"), L("zone", "zz_dup")};
    struct labels ls1 = LABELS(l1), ls2 = LABELS(l2);
    const struct pprof_part parts[] = {{.agg = f->agg, .labels = &ls1},
                                       {.agg = other, .labels = &ls2}};
    encode_parts(f, parts, 2);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_int_equal(p->n_sample, 3);
    check_part(p, 0, f->agg,
               (const char *const[]){"pid", "1", "job", "x", "zone", "\xe2\x82\xac", NULL});
    check_part(p, 2, other, (const char *const[]){"zone", "b", "pid", "3", NULL});
    static const char *const unused[] = {"2", "noname", "t", "99", "y", "empty", "nul", "zz_dup"};
    for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++) {
        if (has_string(p, unused[i]))
            fail_msg("string '%s' of a label not written was written", unused[i]);
    }
    agg_free(other);
}

#define FFFD UTF8_REPLACEMENT_STR

/*
 * string_table is valid UTF-8 whatever the window and labels hold (text is
 * made valid where it enters pyprofd; this is the encoder's own guard):
 * each invalid sequence written as U+FFFD and counted, strings that become
 * equal stored once, valid strings (a real U+FFFD included) left alone.
 */
static void test_pprof_build__string_table_is_valid_utf8(void **state)
{
    struct fixture *f = *state;
    struct unwind_frame fr[] = {
        {.kind = UNWIND_FRAME_PYTHON,
         .function = "run\xe2\x82\xff",
         .file = "/srv/\xff\xfe\x1b[31mapp.py",
         .first_line = 1,
         .code_raddr = 0x10,
         .pos = {.line = 2, .end_line = 2, .col = 1, .end_col = 2}},
        {.kind = UNWIND_FRAME_PYTHON,
         .function = "run\xe2\x82\xfe", /* becomes the same text as the frame above */
         .file = "ok_" FFFD ".py",
         .first_line = 1,
         .code_raddr = 0x20,
         .pos = {.line = 3, .end_line = 3, .col = 1, .end_col = 2}},
    };
    assert_int_equal(agg_add_in(f->agg, fr, 2, 7, 0, "Main\xc0Thread", "task-\xed\xa0\x80", 1, 10),
                     0);
    struct label l[] = {{.name = (char *)"service_name", .value = (char *)"svc\xff"}};
    struct labels ls = {.v = l, .n = 1, .cap = 1};
    struct pprof_part part = {.agg = f->agg, .labels = &ls};
    struct pprof_meta m = pprof_test_meta();
    m.comment = "comment \xf4\x90\x80\x80";
    uint8_t *gz = NULL;
    size_t len = 0;
    uint64_t before = utf8_replaced_total();
    assert_int_equal(pprof_build_multi(&part, 1, &m, &gz, &len), 0);
    /* run 2 + 2, file 2, thread 1, task 3, label 1, comment 4 */
    assert_int_equal(utf8_replaced_total() - before, 15);
    assert_int_equal(pprof_test_decode(gz, len, &f->prof), 0);
    alloc_free(gz);
    char why[256] = "";
    if (pprof_test_check(f->prof, why, sizeof(why))) /* valid UTF-8 and no repeats */
        fail_msg("profile breaks a rule: %s", why);
    const Perftools__Profiles__Profile *p = f->prof;
    assert_true(has_string(p, "run" FFFD FFFD));
    assert_true(has_string(p, "/srv/" FFFD FFFD "\x1b[31mapp.py"));
    assert_true(has_string(p, "ok_" FFFD ".py"));
    assert_true(has_string(p, "Main" FFFD "Thread"));
    assert_true(has_string(p, "task-" FFFD FFFD FFFD));
    assert_true(has_string(p, "svc" FFFD));
    assert_true(has_string(p, "comment " FFFD FFFD FFFD FFFD));
    assert_int_equal(p->n_function, 2);
    assert_int_equal(p->function[0]->name, p->function[1]->name);
}

#define T(name) cmocka_unit_test_setup_teardown(name, pprof_build_setup, pprof_build_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_pprof_build__mirrors_the_window),
        T(test_pprof_build__sample_types_period_and_times),
        T(test_pprof_build__labels),
        T(test_pprof_build__sub_interpreter_label),
        T(test_pprof_build__span_labels),
        T(test_pprof_build__stacks_leaf_first_values_summed),
        T(test_pprof_build__system_name_only_when_it_differs),
        T(test_pprof_build__native_frames_have_addresses_and_mappings),
        T(test_pprof_build__golden),
        T(test_pprof_build__merges_windows_with_their_labels),
        T(test_pprof_build__empty_labelled_part_alone),
        T(test_pprof_build__empty_parts_among_labelled_parts),
        T(test_pprof_build__part_with_every_sample_dropped),
        T(test_pprof_build__string_table_is_valid_utf8),
        T(test_pprof_build__part_labels_first_of_each_name),
        T(test_pprof_build__empty_window),
        T(test_pprof_build__added_strings_are_deduplicated),
        T(test_pprof_build__rejects_bad_meta),
        T(test_pprof_build__respects_size_cap),
        T(test_pprof_build__survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
