/* SPDX-License-Identifier: MIT */
/*
 * gecko.c: a recording as a Gecko profile (gecko.h). Per thread: its frames
 * (one per location it sampled), its stacks as a prefix tree (stackTable:
 * [prefix, frame], root first), its samples in time order and the strings
 * they name; each thread's tables are its own, as the format has them.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "base/jsonw.h"
#include "pprof/gecko.h"
#include "pprof/threads.h"

/*
 * The Gecko profile format version written (the Firefox Profiler's
 * GECKO_PROFILE_VERSION when this was written): at its own version a profile
 * is loaded as it is, a newer one is refused, an older one upgraded. Its
 * shape: threads with a stringTable, the eight frameTable columns below,
 * samples with an eventDelay column, top-level libs, processes and sources
 * present even when empty, meta.markerSchema present.
 */
#define GECKO_VERSION 36

#define GECKO_NONE UINT32_MAX

enum gecko_category { GECKO_PYTHON, GECKO_NATIVE, GECKO_GC, GECKO_OTHER };

/* The categories, in enum gecko_category's order: name and colour; one subcategory each. */
static const char *const gecko_categories[][2] = {
    {"Python", "yellow"}, {"Native", "blue"}, {"GC", "orange"}, {"Other", "grey"}};

struct gecko_node {
    uint32_t prefix; /* GECKO_NONE: a root */
    uint32_t frame;
};

/* One thread's tables, reused from thread to thread. */
struct gecko_thread {
    const struct agg *a;
    uint32_t *frame_of; /* per location: frame index + 1 in this thread, 0: none */
    uint32_t *frames;   /* per frame: its location */
    size_t nframes;
    uint32_t *stack_of; /* per window sample: stack index + 1 in this thread, 0: none */
    struct gecko_node *nodes;
    size_t nnodes;
    uint32_t *node_slot; /* hash of (prefix, frame) -> node index, GECKO_NONE: free */
    size_t node_mask;
    uint32_t *tasks; /* marker names in this thread: task string ids */
    size_t ntasks;
};

static double gecko_ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

static uint32_t gecko_frame(struct gecko_thread *g, uint32_t loc)
{
    if (!g->frame_of[loc]) {
        g->frames[g->nframes] = loc;
        g->frame_of[loc] = (uint32_t)++g->nframes;
    }
    return g->frame_of[loc] - 1;
}

static uint32_t gecko_node(struct gecko_thread *g, uint32_t prefix, uint32_t frame)
{
    uint64_t h = (((uint64_t)prefix << 32) | frame) * HASH_GOLDEN;
    for (size_t i = (size_t)(h >> 20) & g->node_mask;; i = (i + 1) & g->node_mask) {
        uint32_t id = g->node_slot[i];
        if (id == GECKO_NONE) {
            g->nodes[g->nnodes] = (struct gecko_node){.prefix = prefix, .frame = frame};
            g->node_slot[i] = (uint32_t)g->nnodes;
            return (uint32_t)g->nnodes++;
        }
        if (g->nodes[id].prefix == prefix && g->nodes[id].frame == frame)
            return id;
    }
}

/* The stack of window sample @si in this thread: its leaf node. */
static uint32_t gecko_stack(struct gecko_thread *g, uint32_t si)
{
    if (g->stack_of[si])
        return g->stack_of[si] - 1;
    const struct agg_sample *s = agg_sample(g->a, si);
    uint32_t node = GECKO_NONE;
    for (uint32_t k = s->nlocations; k-- > 0;)
        node = gecko_node(g, node, gecko_frame(g, s->locations[k]));
    if (node != GECKO_NONE)
        g->stack_of[si] = node + 1;
    return node;
}

static uint32_t gecko_task(struct gecko_thread *g, uint32_t task)
{
    for (size_t i = 0; i < g->ntasks; i++)
        if (g->tasks[i] == task)
            return (uint32_t)i;
    g->tasks[g->ntasks] = task;
    return (uint32_t)g->ntasks++;
}

static enum gecko_category gecko_category_of(const struct agg *a, const struct agg_location *l)
{
    if (l->address)
        return GECKO_NATIVE;
    if (agg_function_is_marker(a, l->function))
        return strcmp(agg_string(a, agg_function(a, l->function)->name), "<GC>") == 0 ? GECKO_GC
                                                                                      : GECKO_OTHER;
    return GECKO_PYTHON;
}

/* A frame's location string: "qualname (file:first line)", "symbol (in lib)" or the marker. */
static void gecko_location(const struct agg *a, const struct agg_location *l, struct jsonw *w)
{
    char text[2048];
    const struct agg_function *fn = agg_function(a, l->function);
    const char *name = agg_string(a, fn->name), *file = agg_string(a, fn->filename);
    if (l->address) {
        const char *base = strrchr(file, '/');
        snprintf(text, sizeof(text), "%s (in %s)", name, base ? base + 1 : file);
    } else if (agg_function_is_marker(a, l->function) || agg_function_is_opcode(a, l->function)) {
        snprintf(text, sizeof(text), "%s", name);
    } else {
        int64_t line = fn->start_line > 0 ? fn->start_line : l->line;
        snprintf(text, sizeof(text), "%s (%s:%" PRId64 ")", name, file, line > 0 ? line : 0);
    }
    jsonw_string(w, NULL, text);
}

/* The column names of a table and their indices: {"schema":{"name":0,...}}. */
static void gecko_schema(struct jsonw *w, const char *const *cols, size_t n)
{
    jsonw_object(w, "schema");
    for (size_t i = 0; i < n; i++)
        jsonw_uint(w, cols[i], i);
    jsonw_end(w);
}

static const char *const gecko_sample_schema[] = {"stack", "time", "eventDelay"};
static const char *const gecko_marker_schema[] = {"name",  "startTime", "endTime",
                                                  "phase", "category",  "data"};
static const char *const gecko_stack_schema[] = {"prefix", "frame"};
static const char *const gecko_frame_schema[] = {"location",       "relevantForJS", "innerWindowID",
                                                 "implementation", "line",          "column",
                                                 "category",       "subcategory"};
static const char *const gecko_source_schema[] = {"id", "filename", "startLine", "startColumn",
                                                  "sourceMapURL"};

/* The profile's "meta" object. */
static void gecko_meta_write(const struct gecko_meta *m, struct jsonw *w)
{
    static const char *const empty[] = {"oscpu", "abi",        "toolkit",
                                        "misc",  "appBuildID", "sourceURL"};
    jsonw_object(w, "meta");
    jsonw_int(w, "version", GECKO_VERSION);
    jsonw_fixed(w, "interval", gecko_ms(m->interval_ns), 6);
    jsonw_fixed(w, "startTime", (double)m->start_wall_ns / 1e6, 3);
    jsonw_null(w, "shutdownTime");
    jsonw_int(w, "profilingStartTime", 0);
    jsonw_fixed(w, "profilingEndTime", gecko_ms(m->duration_ns), 3);
    jsonw_int(w, "processType", 0);
    jsonw_string(w, "product", m->product ? m->product : "pyprofd");
    jsonw_int(w, "stackwalk", 0);
    jsonw_bool(w, "debug", false);
    jsonw_bool(w, "presymbolicated", true);
    jsonw_string(w, "platform", "Linux");
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(empty); i++)
        jsonw_string(w, empty[i], "");
    jsonw_array(w, "categories");
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(gecko_categories); i++) {
        jsonw_object(w, NULL);
        jsonw_string(w, "name", gecko_categories[i][0]);
        jsonw_string(w, "color", gecko_categories[i][1]);
        jsonw_array(w, "subcategories");
        jsonw_string(w, NULL, "Other");
        jsonw_end(w);
        jsonw_end(w);
    }
    jsonw_end(w);
    jsonw_array(w, "markerSchema");
    jsonw_end(w);
    jsonw_end(w);
}

static void gecko_thread_write(struct gecko_thread *g, const struct out_threads *th, size_t k,
                               const struct timeline_entry *e, const uint32_t *order, size_t n,
                               const struct gecko_meta *m, struct jsonw *w)
{
    const struct agg *a = g->a;
    const struct out_thread *t = &th->t[k];
    /* the tables, from the samples in time order */
    g->nframes = g->nnodes = g->ntasks = 0;
    memset(g->frame_of, 0, agg_location_count(a) * sizeof(*g->frame_of));
    memset(g->stack_of, 0, agg_sample_count(a) * sizeof(*g->stack_of));
    for (size_t i = 0; i <= g->node_mask; i++)
        g->node_slot[i] = GECKO_NONE;
    for (size_t i = 0; i < n; i++) {
        uint32_t si = e[order[i]].sample;
        (void)gecko_stack(g, si);
        uint32_t task = agg_sample(a, si)->task_name;
        if (task)
            (void)gecko_task(g, task);
    }
    double first = n ? gecko_ms(e[order[0]].at_ns - m->start_mono_ns) : 0.0;

    jsonw_object(w, NULL);
    jsonw_string(w, "name", k == 0 ? "GeckoMain" : agg_string(a, t->name));
    jsonw_string(w, "processType", "default");
    char pname[1200];
    snprintf(pname, sizeof(pname), "%s (pid %" PRId64 ")",
             m->process_name && *m->process_name ? m->process_name : "python", m->pid);
    jsonw_string(w, "processName", pname);
    jsonw_int(w, "pid", m->pid);
    jsonw_uint(w, "tid", t->id);
    jsonw_fixed(w, "registerTime", first, 3);
    jsonw_null(w, "unregisterTime");
    jsonw_int(w, "processStartupTime", 0);
    jsonw_null(w, "processShutdownTime");

    jsonw_object(w, "samples");
    gecko_schema(w, gecko_sample_schema, PYPROFD_ARRAY_SIZE(gecko_sample_schema));
    jsonw_array(w, "data");
    for (size_t i = 0; i < n; i++) {
        const struct timeline_entry *x = &e[order[i]];
        uint64_t rel = x->at_ns > m->start_mono_ns ? x->at_ns - m->start_mono_ns : 0;
        uint32_t stack = g->stack_of[x->sample];
        jsonw_array(w, NULL);
        if (stack)
            jsonw_uint(w, NULL, stack - 1);
        else /* a sample of no frame */
            jsonw_null(w, NULL);
        jsonw_fixed(w, NULL, gecko_ms(rel), 3);
        jsonw_int(w, NULL, 0);
        jsonw_end(w);
    }
    /* the end of the recording, as a sample of no stack: speedscope's importer
     * closes the open frames only at such a sample (the Firefox Profiler
     * leaves a sample without a stack out of its trees) */
    uint64_t last = n ? e[order[n - 1]].at_ns - m->start_mono_ns : 0;
    jsonw_array(w, NULL);
    jsonw_null(w, NULL);
    jsonw_fixed(w, NULL, gecko_ms(m->duration_ns > last ? m->duration_ns : last + m->interval_ns),
                3);
    jsonw_int(w, NULL, 0);
    jsonw_end(w);
    jsonw_end(w);
    jsonw_end(w);

    /* a marker per run of samples in one task: from the first to one interval past the last */
    jsonw_object(w, "markers");
    gecko_schema(w, gecko_marker_schema, PYPROFD_ARRAY_SIZE(gecko_marker_schema));
    jsonw_array(w, "data");
    for (size_t i = 0; i < n;) {
        uint32_t task = agg_sample(a, e[order[i]].sample)->task_name;
        size_t j = i;
        while (j + 1 < n && agg_sample(a, e[order[j + 1]].sample)->task_name == task)
            j++;
        if (task) {
            uint64_t t0 = e[order[i]].at_ns - m->start_mono_ns;
            uint64_t t1 = e[order[j]].at_ns - m->start_mono_ns + m->interval_ns;
            jsonw_array(w, NULL);
            jsonw_uint(w, NULL, g->nframes + gecko_task(g, task));
            jsonw_fixed(w, NULL, gecko_ms(t0), 3);
            jsonw_fixed(w, NULL, gecko_ms(t1), 3);
            jsonw_int(w, NULL, 1);
            jsonw_int(w, NULL, GECKO_OTHER);
            jsonw_null(w, NULL);
            jsonw_end(w);
        }
        i = j + 1;
    }
    jsonw_end(w);
    jsonw_end(w);

    jsonw_object(w, "stackTable");
    gecko_schema(w, gecko_stack_schema, PYPROFD_ARRAY_SIZE(gecko_stack_schema));
    jsonw_array(w, "data");
    for (size_t i = 0; i < g->nnodes; i++) {
        const struct gecko_node *nd = &g->nodes[i];
        jsonw_array(w, NULL);
        if (nd->prefix == GECKO_NONE)
            jsonw_null(w, NULL);
        else
            jsonw_uint(w, NULL, nd->prefix);
        jsonw_uint(w, NULL, nd->frame);
        jsonw_end(w);
    }
    jsonw_end(w);
    jsonw_end(w);

    jsonw_object(w, "frameTable");
    gecko_schema(w, gecko_frame_schema, PYPROFD_ARRAY_SIZE(gecko_frame_schema));
    jsonw_array(w, "data");
    for (size_t i = 0; i < g->nframes; i++) {
        const struct agg_location *l = agg_location(a, g->frames[i]);
        bool placed = !l->address && !agg_function_is_marker(a, l->function);
        jsonw_array(w, NULL);
        jsonw_uint(w, NULL, i);
        jsonw_bool(w, NULL, false);
        jsonw_int(w, NULL, 0);
        jsonw_null(w, NULL);
        if (l->line > 0 && placed)
            jsonw_int(w, NULL, l->line);
        else
            jsonw_null(w, NULL);
        if (l->column > 0 && placed)
            jsonw_int(w, NULL, l->column);
        else
            jsonw_null(w, NULL);
        jsonw_int(w, NULL, gecko_category_of(a, l));
        jsonw_int(w, NULL, 0);
        jsonw_end(w);
    }
    jsonw_end(w);
    jsonw_end(w);

    /* strings: each frame's location at its index, then the task markers' names */
    jsonw_array(w, "stringTable");
    for (size_t i = 0; i < g->nframes; i++)
        gecko_location(a, agg_location(a, g->frames[i]), w);
    for (size_t i = 0; i < g->ntasks; i++) {
        char name[600];
        snprintf(name, sizeof(name), "<task %s>", agg_string(a, g->tasks[i]));
        jsonw_string(w, NULL, name);
    }
    jsonw_end(w);
    jsonw_end(w);
}

int gecko_write(const struct agg *a, const struct timeline *tl, const struct gecko_meta *m,
                FILE *out)
{
    if (!tl)
        return -EINVAL;
    struct out_threads th;
    struct jsonw w;
    int err = out_threads_build(a, m->pid, &th);
    if (err)
        return err;
    uint32_t *order = NULL;
    size_t *start = NULL;
    size_t nloc = agg_location_count(a), ns = agg_sample_count(a), slots = 0;
    for (size_t i = 0; i < ns; i++)
        slots += agg_sample(a, i)->nlocations;
    size_t cap = 64;
    while (cap < 2 * slots + 2)
        cap *= 2;
    struct gecko_thread g = {.a = a, .node_mask = cap - 1};
    g.frame_of = alloc_calloc(nloc + 1, sizeof(*g.frame_of));
    g.frames = alloc_calloc(nloc + 1, sizeof(*g.frames));
    g.stack_of = alloc_calloc(ns + 1, sizeof(*g.stack_of));
    g.nodes = alloc_calloc(slots + 1, sizeof(*g.nodes));
    g.node_slot = alloc_calloc(cap, sizeof(*g.node_slot));
    g.tasks = alloc_calloc(ns + 1, sizeof(*g.tasks));
    if (!g.frame_of || !g.frames || !g.stack_of || !g.nodes || !g.node_slot || !g.tasks ||
        out_threads_order(&th, tl, &order, &start)) {
        err = -ENOMEM;
        goto out;
    }
    size_t n = 0;
    const struct timeline_entry *e = timeline_entries(tl, &n);

    jsonw_init_file(&w, out, 0);
    jsonw_object(&w, NULL);
    jsonw_object(&w, "systemHost");
    jsonw_string(&w, "name", "Firefox");
    jsonw_end(&w);
    jsonw_fixed(&w, "duration", gecko_ms(m->duration_ns), 3);
    jsonw_object(&w, "profile");
    gecko_meta_write(m, &w);
    jsonw_array(&w, "libs");
    jsonw_end(&w);
    jsonw_array(&w, "pages");
    jsonw_end(&w);
    jsonw_array(&w, "pausedRanges");
    jsonw_end(&w);
    jsonw_array(&w, "processes");
    jsonw_end(&w);
    jsonw_object(&w, "sources");
    gecko_schema(&w, gecko_source_schema, PYPROFD_ARRAY_SIZE(gecko_source_schema));
    jsonw_array(&w, "data");
    jsonw_end(&w);
    jsonw_end(&w);
    jsonw_array(&w, "threads");
    for (size_t k = 0; k < th.n; k++)
        gecko_thread_write(&g, &th, k, e, order + start[k], start[k + 1] - start[k], m, &w);
    jsonw_end(&w);
    jsonw_end(&w);
    jsonw_end(&w);
    err = jsonw_finish(&w);
    if (!err && (fputc('\n', out) == EOF || ferror(out)))
        err = -EIO;
out:
    alloc_free(g.frame_of);
    alloc_free(g.frames);
    alloc_free(g.stack_of);
    alloc_free(g.nodes);
    alloc_free(g.node_slot);
    alloc_free(g.tasks);
    alloc_free(order);
    alloc_free(start);
    out_threads_release(&th);
    return err;
}
