/* SPDX-License-Identifier: MIT */
/*
 * promtext.c: the Prometheus text exposition format (0.0.4) writer, the
 * fixed-bucket histogram and the process_* metrics read from /proc/self.
 * Each family keeps its own header and sample lines; the document is put
 * together, family after family in the order they were first opened, when it
 * is read (promtext_data(), promtext_take()). Every public write builds its
 * whole lines in a scratch buffer first and appends them to their family
 * only when all of them were made, so a family is always a sequence of
 * complete, valid lines.
 */
#include "base/compat.h"

#include "base/promtext.h"

#include <dirent.h>
#include <math.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/readfile.h"
#include "base/utf8.h"

#define PROMTEXT_HIST_MAGIC 0x50484953u /* "PHIS" */

/* One family: its # HELP / # TYPE lines, fixed when it is first opened, and its samples. */
struct promtext_family {
    char *name;
    char *head; /* "# HELP ...\n# TYPE ...\n" */
    enum promtext_type type;
    struct buf lines;
};

struct promtext {
    size_t cap;
    size_t len; /* the document's length: every head and every line */
    int err;    /* sticky -E2BIG / -ENOMEM */
    struct promtext_family *fams;
    size_t nfams, afams;
    bool open;          /* a family is open */
    size_t open_idx;    /* which */
    struct buf scratch; /* the lines of the call being made */
    struct buf doc;     /* the document as promtext_data() last put it together */
};

/* ---- lines, built in w->scratch ---- */

static int promtext_puts(struct promtext *w, const char *s)
{
    return buf_adds(&w->scratch, s);
}

/*
 * Appends @a s escaped: backslash and newline always, the double quote when
 * @a quote (label values); invalid UTF-8 becomes U+FFFD.
 */
static int promtext_put_escaped(struct promtext *w, const char *s, bool quote)
{
    int rc = 0;
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    size_t i = 0;
    while (rc == 0 && i < n) {
        /* copy the longest run that needs no escaping in one go */
        size_t run = i;
        while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '\\' &&
               !(quote && p[run] == '"'))
            run++;
        if (run > i) {
            rc = buf_add(&w->scratch, s + i, run - i);
            i = run;
            continue;
        }
        if (p[i] == '\\') {
            rc = buf_add(&w->scratch, "\\\\", 2);
            i++;
        } else if (p[i] == '\n') {
            rc = buf_add(&w->scratch, "\\n", 2);
            i++;
        } else if (p[i] == '"') {
            rc = buf_add(&w->scratch, "\\\"", 2);
            i++;
        } else {
            /* valid UTF-8 out: an invalid sequence is one U+FFFD (base/utf8.h), counted */
            bool valid;
            size_t l = utf8_next(p + i, n - i, &valid);
            if (valid) {
                rc = buf_add(&w->scratch, s + i, l);
            } else {
                rc = buf_add(&w->scratch, UTF8_REPLACEMENT_STR, UTF8_REPLACEMENT_LEN);
                utf8_count_replaced(1);
            }
            i += l;
        }
    }
    return rc;
}

/* ---- names ---- */

static bool promtext_valid_metric_name(const char *s)
{
    if (!s || !*s)
        return false;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

static bool promtext_valid_label_name(const char *s)
{
    if (!s || !*s || (s[0] == '_' && s[1] == '_'))
        return false;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

/* The family called @a name, or NULL. A scan: a document has tens of families, not thousands. */
static struct promtext_family *promtext_find(const struct promtext *w, const char *name)
{
    for (size_t i = 0; i < w->nfams; i++) {
        if (strcmp(w->fams[i].name, name) == 0)
            return &w->fams[i];
    }
    return NULL;
}

/* ---- values ---- */

void promtext_format_value(double v, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, size, "%s", v > 0 ? "+Inf" : "-Inf");
    } else if (v == 0) {
        snprintf(buf, size, "0"); /* also -0 */
    } else if (v == trunc(v) && fabs(v) <= 9007199254740992.0) {
        snprintf(buf, size, "%.0f", v);
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, size, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
    }
}

/* ---- public writer ---- */

int promtext_new(size_t cap, struct promtext **out)
{
    struct promtext *w = alloc_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->cap = cap ? cap : PROMTEXT_DEFAULT_CAP;
    buf_init(&w->scratch, w->cap);
    buf_init(&w->doc, w->cap);
    *out = w;
    return 0;
}

/* Forgets every family; the writer is empty again. */
static void promtext_clear(struct promtext *w)
{
    for (size_t i = 0; i < w->nfams; i++) {
        alloc_free(w->fams[i].name);
        alloc_free(w->fams[i].head);
        buf_release(&w->fams[i].lines);
    }
    w->nfams = 0;
    w->len = 0;
    w->open = false;
    w->err = 0;
}

void promtext_free(struct promtext *w)
{
    if (!w)
        return;
    promtext_clear(w);
    alloc_free(w->fams);
    buf_release(&w->scratch);
    buf_release(&w->doc);
    alloc_free(w);
}

/* Puts the document together in w->doc: each family's head, then its lines. */
static int promtext_assemble(struct promtext *w)
{
    int rc = 0;
    buf_reset(&w->doc);
    for (size_t i = 0; rc == 0 && i < w->nfams; i++) {
        rc = buf_adds(&w->doc, w->fams[i].head);
        if (rc == 0)
            rc = buf_add(&w->doc, buf_str(&w->fams[i].lines), buf_len(&w->fams[i].lines));
    }
    if (rc != 0)
        buf_reset(&w->doc);
    return rc;
}

const char *promtext_data(struct promtext *w, size_t *len)
{
    int rc = promtext_assemble(w);
    *len = rc == 0 ? buf_len(&w->doc) : 0;
    return rc == 0 ? buf_str(&w->doc) : NULL;
}

int promtext_error(const struct promtext *w)
{
    return w->err;
}

int promtext_take(struct promtext *w, char **out, size_t *len)
{
    int rc = promtext_assemble(w);
    char *doc = NULL;
    if (rc == 0) {
        doc = buf_take(&w->doc, len);
        if (!doc)
            rc = -ENOMEM;
    }
    if (rc == 0) {
        *out = doc;
        promtext_clear(w);
    }
    return rc;
}

/*
 * Ends a public write: the lines made in the scratch buffer go to the open
 * family (@a fam may be NULL when there is nothing to append), counted against
 * the cap; on failure nothing is kept, and running out of room is remembered.
 */
static int promtext_finish(struct promtext *w, struct promtext_family *fam, int rc)
{
    if (rc == 0 && fam) {
        size_t n = buf_len(&w->scratch);
        if (n > w->cap - w->len)
            rc = -E2BIG;
        else
            rc = buf_add(&fam->lines, buf_str(&w->scratch), n);
        if (rc == 0)
            w->len += n;
    }
    buf_reset(&w->scratch);
    if (rc == -E2BIG || rc == -ENOMEM)
        w->err = rc;
    return rc;
}

static const char *promtext_type_name(enum promtext_type type)
{
    switch (type) {
    case PROMTEXT_COUNTER:
        return "counter";
    case PROMTEXT_GAUGE:
        return "gauge";
    case PROMTEXT_HISTOGRAM:
        return "histogram";
    case PROMTEXT_SUMMARY:
        return "summary";
    case PROMTEXT_UNTYPED:
        return "untyped";
    }
    return NULL;
}

/* Adds family @a name with the head in w->scratch (counted against the cap) and opens it. */
static int promtext_family_add(struct promtext *w, const char *name, enum promtext_type type)
{
    int rc = 0;
    char *nm = NULL, *head = NULL;
    size_t n = buf_len(&w->scratch);
    if (n > w->cap - w->len) {
        rc = -E2BIG;
        goto out;
    }
    if (w->nfams == w->afams) {
        size_t want = w->afams ? w->afams * 2 : 32;
        struct promtext_family *f = alloc_realloc(w->fams, want * sizeof(*f));
        if (!f) {
            rc = -ENOMEM;
            goto out;
        }
        w->fams = f;
        w->afams = want;
    }
    nm = alloc_strdup(name);
    head = alloc_strdup(buf_str(&w->scratch));
    if (!nm || !head) {
        rc = -ENOMEM;
        goto out;
    }
    struct promtext_family *f = &w->fams[w->nfams];
    f->name = nm;
    f->head = head;
    f->type = type;
    buf_init(&f->lines, w->cap);
    nm = head = NULL;
    w->len += n;
    w->open = true;
    w->open_idx = w->nfams++;
out:
    alloc_free(nm);
    alloc_free(head);
    return rc;
}

int promtext_family(struct promtext *w, const char *name, enum promtext_type type, const char *help)
{
    const char *tname = promtext_type_name(type);
    int rc = w->err;
    if (rc != 0)
        goto out;
    if (!promtext_valid_metric_name(name) || !tname) {
        rc = -EINVAL;
        goto out;
    }
    struct promtext_family *f = promtext_find(w, name);
    if (f) {
        /* written before: its samples go on where it already is */
        if (f->type != type) {
            rc = -EEXIST;
        } else {
            w->open = true;
            w->open_idx = (size_t)(f - w->fams);
        }
        goto out;
    }
    if (help) {
        rc = promtext_puts(w, "# HELP ");
        if (rc == 0)
            rc = promtext_puts(w, name);
        if (rc == 0)
            rc = promtext_puts(w, " ");
        if (rc == 0)
            rc = promtext_put_escaped(w, help, false);
        if (rc == 0)
            rc = promtext_puts(w, "\n");
    }
    if (rc == 0)
        rc = buf_addf(&w->scratch, "# TYPE %s %s\n", name, tname);
    if (rc == 0)
        rc = promtext_family_add(w, name, type);
out:
    return promtext_finish(w, NULL, rc);
}

/* The open family, or NULL. */
static struct promtext_family *promtext_open_family(struct promtext *w)
{
    return w->open ? &w->fams[w->open_idx] : NULL;
}

/* Whether full sample name @a name may appear in family @a f. */
static bool promtext_name_in_family(const struct promtext_family *f, const char *name)
{
    size_t flen = strlen(f->name);
    if (strncmp(name, f->name, flen) != 0)
        return false;
    const char *rest = name + flen;
    if (*rest == '\0')
        return f->type != PROMTEXT_HISTOGRAM;
    if (f->type == PROMTEXT_HISTOGRAM && strcmp(rest, "_bucket") == 0)
        return true;
    if ((f->type == PROMTEXT_HISTOGRAM || f->type == PROMTEXT_SUMMARY) &&
        (strcmp(rest, "_sum") == 0 || strcmp(rest, "_count") == 0))
        return true;
    return false;
}

/*
 * Writes one sample line of the open family @a f into the scratch buffer;
 * @a extra (may be NULL) is one more label after @a labels (the histogram's
 * le).
 */
static int promtext_line(struct promtext *w, const struct promtext_family *f, const char *name,
                         const struct promtext_label *labels, size_t nlabels,
                         const struct promtext_label *extra, double value)
{
    char full[256];
    char num[64];
    int rc = 0;
    if (!f) {
        rc = -EPROTO;
        goto out;
    }
    int n = 0;
    if (!name)
        n = snprintf(full, sizeof(full), "%s", f->name);
    else if (name[0] == '_')
        n = snprintf(full, sizeof(full), "%s%s", f->name, name);
    else
        n = snprintf(full, sizeof(full), "%s", name);
    if (n < 0 || (size_t)n >= sizeof(full) || !promtext_valid_metric_name(full)) {
        rc = -EINVAL;
        goto out;
    }
    if (!promtext_name_in_family(f, full)) {
        rc = -EPROTO;
        goto out;
    }
    if (nlabels > 0 && !labels) {
        rc = -EINVAL;
        goto out;
    }
    for (size_t i = 0; i < nlabels; i++) {
        if (!promtext_valid_label_name(labels[i].name) || !labels[i].value ||
            (extra && strcmp(labels[i].name, extra->name) == 0)) {
            rc = -EINVAL;
            goto out;
        }
    }
    rc = promtext_puts(w, full);
    size_t total = nlabels + (extra ? 1 : 0);
    for (size_t i = 0; rc == 0 && i < total; i++) {
        const struct promtext_label *l = i < nlabels ? &labels[i] : extra;
        rc = promtext_puts(w, i == 0 ? "{" : ",");
        if (rc == 0)
            rc = promtext_puts(w, l->name);
        if (rc == 0)
            rc = promtext_puts(w, "=\"");
        if (rc == 0)
            rc = promtext_put_escaped(w, l->value, true);
        if (rc == 0)
            rc = promtext_puts(w, "\"");
    }
    if (rc == 0 && total > 0)
        rc = promtext_puts(w, "}");
    promtext_format_value(value, num, sizeof(num));
    if (rc == 0)
        rc = promtext_puts(w, " ");
    if (rc == 0)
        rc = promtext_puts(w, num);
    if (rc == 0)
        rc = promtext_puts(w, "\n");
out:
    return rc;
}

int promtext_sample(struct promtext *w, const char *name, const struct promtext_label *labels,
                    size_t nlabels, double value)
{
    struct promtext_family *f = promtext_open_family(w);
    int rc = w->err;
    if (rc == 0)
        rc = promtext_line(w, f, name, labels, nlabels, NULL, value);
    return promtext_finish(w, f, rc);
}

/* ---- histogram ---- */

const double promtext_buckets_seconds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                           0.5,   1,      2.5,   5,    10,    30,   60};
const size_t promtext_buckets_seconds_count = PYPROFD_ARRAY_SIZE(promtext_buckets_seconds);
const double promtext_buckets_bytes[] = {1024,    4096,    16384,    65536,   262144,
                                         1048576, 4194304, 16777216, 67108864};
const size_t promtext_buckets_bytes_count = PYPROFD_ARRAY_SIZE(promtext_buckets_bytes);

int promtext_hist_init(struct promtext_hist *h, const double *bounds, size_t n)
{
    int rc = 0;
    memset(h, 0, sizeof(*h));
    if (!bounds || n == 0 || n > PROMTEXT_HIST_MAX_BOUNDS) {
        rc = -EINVAL;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
            rc = -EINVAL;
            goto out;
        }
        h->bounds[i] = bounds[i];
    }
    for (size_t i = 0; i <= n; i++)
        atomic_init(&h->counts[i], 0);
    atomic_init(&h->sum_bits, 0); /* the bits of +0.0 */
    h->nbounds = (uint32_t)n;
    h->magic = PROMTEXT_HIST_MAGIC;
out:
    if (rc != 0)
        memset(h, 0, sizeof(*h));
    return rc;
}

void promtext_hist_observe(struct promtext_hist *h, double v)
{
    PYPROFD_ASSERT(h->magic == PROMTEXT_HIST_MAGIC);
    if (isnan(v))
        return;
    /* the first bucket whose upper bound holds v; nbounds is small, a scan is fine */
    uint32_t i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->counts[i], 1, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&h->sum_bits, memory_order_relaxed);
    uint64_t new_bits;
    do {
        double sum;
        memcpy(&sum, &old, sizeof(sum));
        sum += v;
        memcpy(&new_bits, &sum, sizeof(sum));
    } while (!atomic_compare_exchange_weak_explicit(&h->sum_bits, &old, new_bits,
                                                    memory_order_relaxed, memory_order_relaxed));
}

int promtext_histogram(struct promtext *w, const struct promtext_label *labels, size_t nlabels,
                       const struct promtext_hist *h)
{
    struct promtext_family *f = promtext_open_family(w);
    char le[64];
    uint64_t counts[PROMTEXT_HIST_MAX_BOUNDS + 1];
    int rc = w->err;
    if (rc != 0)
        goto out;
    PYPROFD_ASSERT(h->magic == PROMTEXT_HIST_MAGIC);
    if (!f || f->type != PROMTEXT_HISTOGRAM) {
        rc = -EPROTO;
        goto out;
    }
    /* one snapshot of the counts, so +Inf and _count agree */
    uint32_t nb = h->nbounds <= PROMTEXT_HIST_MAX_BOUNDS ? h->nbounds : PROMTEXT_HIST_MAX_BOUNDS;
    for (uint32_t i = 0; i <= nb; i++)
        counts[i] = atomic_load_explicit(&h->counts[i], memory_order_relaxed);
    uint64_t bits = atomic_load_explicit(&h->sum_bits, memory_order_relaxed);
    double sum;
    memcpy(&sum, &bits, sizeof(sum));
    uint64_t cum = 0;
    for (uint32_t i = 0; rc == 0 && i <= nb; i++) {
        cum += counts[i];
        if (i < nb)
            promtext_format_value(h->bounds[i], le, sizeof(le));
        else
            snprintf(le, sizeof(le), "+Inf");
        const struct promtext_label extra = {"le", le};
        rc = promtext_line(w, f, "_bucket", labels, nlabels, &extra, (double)cum);
    }
    if (rc == 0)
        rc = promtext_line(w, f, "_sum", labels, nlabels, NULL, sum);
    if (rc == 0)
        rc = promtext_line(w, f, "_count", labels, nlabels, NULL, (double)cum);
out:
    return promtext_finish(w, f, rc);
}

/* ---- process metrics ---- */

/*
 * The fields of /proc/PID/stat that process metrics need. Parses @a text
 * (NUL-terminated). Returns 0 or -EINVAL when the line is not one.
 */
PYPROFD_STATIC int promtext_parse_proc_stat(const char *text, struct promtext_proc_stat *out)
{
    int rc = -EINVAL;
    /* the command name may hold spaces and parentheses: fields start after the last ')' */
    const char *p = strrchr(text, ')');
    uint64_t f[25] = {0};
    if (!p)
        goto out;
    p++;
    /* field 3 (state) is a letter; fields 4.. are numbers */
    int field = 3;
    while (field <= 24) {
        while (*p == ' ')
            p++;
        if (*p == '\0' || *p == '\n')
            goto out;
        if (field == 3) {
            p++;
        } else {
            bool neg = *p == '-';
            if (neg)
                p++;
            if (*p < '0' || *p > '9')
                goto out;
            uint64_t v = 0;
            while (*p >= '0' && *p <= '9') {
                v = v * 10 + (uint64_t)(*p - '0');
                p++;
            }
            f[field] = neg ? 0 : v;
        }
        if (*p != ' ' && *p != '\n' && *p != '\0')
            goto out;
        field++;
    }
    out->utime_ticks = f[14];
    out->stime_ticks = f[15];
    out->threads = f[20];
    out->start_ticks = f[22];
    out->vsize_bytes = f[23];
    out->rss_pages = f[24];
    rc = 0;
out:
    return rc;
}

/* Boot time in seconds since the epoch, from the "btime" line of /proc/stat; 0 if unknown. */
static uint64_t promtext_boot_time(void)
{
    char line[4096];
    uint64_t btime = 0;
    bool at_start = true; /* the "intr" line can be longer than line[] */
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        goto out;
    while (fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);
        if (at_start && strncmp(line, "btime ", 6) == 0) {
            const char *p = line + 6;
            while (*p >= '0' && *p <= '9') {
                btime = btime * 10 + (uint64_t)(*p - '0');
                p++;
            }
            break;
        }
        at_start = n > 0 && line[n - 1] == '\n';
    }
    fclose(f);
out:
    return btime;
}

/* Open descriptors of this process, or -errno. The directory's own descriptor is not counted. */
static int64_t promtext_open_fds(void)
{
    int64_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        n = -errno;
        goto out;
    }
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char num[16];
        snprintf(num, sizeof(num), "%d", self);
        if (strcmp(e->d_name, num) == 0)
            continue;
        n++;
    }
    closedir(d);
out:
    return n;
}

/* One single-sample family. */
static int promtext_one(struct promtext *w, const char *name, enum promtext_type type,
                        const char *help, double v)
{
    int rc = promtext_family(w, name, type, help);
    if (rc == 0)
        rc = promtext_sample(w, NULL, NULL, 0, v);
    return rc;
}

int promtext_process_metrics(struct promtext *w)
{
    static const char *const names[] = {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_threads",
        "process_open_fds",
        "process_max_fds",
    };
    char stat[4096];
    struct promtext_proc_stat st;
    int rc = 0;
    /* they describe the one process: a second set would repeat every series */
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(names); i++) {
        if (promtext_find(w, names[i]))
            rc = -EEXIST;
    }
    size_t stat_len = 0;
    bool have_stat = readfile_into("/proc/self/stat", stat, sizeof(stat), &stat_len,
                                   READFILE_INTO_KERNEL) == 0 &&
                     stat_len > 0 && promtext_parse_proc_stat(stat, &st) == 0;
    long tck = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    if (rc == 0 && have_stat && tck > 0)
        rc = promtext_one(w, "process_cpu_seconds_total", PROMTEXT_COUNTER,
                          "Total user and system CPU time spent in seconds.",
                          (double)(st.utime_ticks + st.stime_ticks) / (double)tck);
    if (rc == 0 && have_stat && page > 0)
        rc = promtext_one(w, "process_resident_memory_bytes", PROMTEXT_GAUGE,
                          "Resident memory size in bytes.", (double)st.rss_pages * (double)page);
    if (rc == 0 && have_stat)
        rc = promtext_one(w, "process_virtual_memory_bytes", PROMTEXT_GAUGE,
                          "Virtual memory size in bytes.", (double)st.vsize_bytes);
    if (rc == 0 && have_stat && tck > 0) {
        uint64_t btime = promtext_boot_time();
        if (btime > 0)
            rc = promtext_one(w, "process_start_time_seconds", PROMTEXT_GAUGE,
                              "Start time of the process since unix epoch in seconds.",
                              (double)btime + (double)st.start_ticks / (double)tck);
    }
    if (rc == 0 && have_stat)
        rc = promtext_one(w, "process_threads", PROMTEXT_GAUGE, "Number of OS threads.",
                          (double)st.threads);
    int64_t fds = promtext_open_fds();
    if (rc == 0 && fds >= 0)
        rc = promtext_one(w, "process_open_fds", PROMTEXT_GAUGE, "Number of open file descriptors.",
                          (double)fds);
    struct rlimit rl;
    if (rc == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        rc = promtext_one(w, "process_max_fds", PROMTEXT_GAUGE,
                          "Maximum number of open file descriptors.", (double)rl.rlim_cur);
    return rc;
}
