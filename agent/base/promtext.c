/* SPDX-License-Identifier: MIT */
/*
 * promtext.c: the Prometheus text exposition format (0.0.4) writer, the
 * fixed-bucket histogram and the process_* metrics read from /proc/self.
 * Every public write builds whole lines at the end of the buffer and cuts the
 * buffer back to where it started when anything fails, so a document is
 * always a sequence of complete, valid lines.
 */
#include "base/compat.h"

#include "base/promtext.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/alloc.h"

#define PROMTEXT_INITIAL_ALLOC 4096
#define PROMTEXT_HIST_MAGIC    0x50484953u /* "PHIS" */

struct promtext {
    char *buf;
    size_t len;
    size_t alloc;
    size_t cap;
    int err; /* sticky -E2BIG / -ENOMEM */

    /* Names of the families written so far, each NUL-terminated, back to back. */
    char *names;
    size_t names_len;
    size_t names_alloc;

    bool open;               /* a family is open */
    size_t family_off;       /* offset of its name in names */
    enum promtext_type type; /* its type */
};

/* ---- buffer ---- */

/* Makes room for @a n more bytes in the document. */
static int promtext_reserve(struct promtext *w, size_t n)
{
    int rc = 0;
    if (n > w->cap || w->len > w->cap - n) {
        rc = -E2BIG;
        goto out;
    }
    if (w->len + n > w->alloc) {
        size_t want = w->alloc ? w->alloc : PROMTEXT_INITIAL_ALLOC;
        while (want < w->len + n)
            want = want > w->cap / 2 ? w->cap : want * 2;
        char *p = alloc_realloc(w->buf, want);
        if (!p) {
            rc = -ENOMEM;
            goto out;
        }
        w->buf = p;
        w->alloc = want;
    }
out:
    return rc;
}

static int promtext_put(struct promtext *w, const char *s, size_t n)
{
    int rc = promtext_reserve(w, n);
    if (rc == 0) {
        memcpy(w->buf + w->len, s, n);
        w->len += n;
    }
    return rc;
}

static int promtext_puts(struct promtext *w, const char *s)
{
    return promtext_put(w, s, strlen(s));
}

/*
 * Length of the valid UTF-8 sequence at @a s (at most @a n bytes), or 0 when
 * the bytes there are not one (stray continuation, overlong form, surrogate,
 * beyond U+10FFFF, truncated).
 */
static size_t promtext_utf8_len(const unsigned char *s, size_t n)
{
    size_t len = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0) {
        len = 2, cp = s[0] & 0x1f, min = 0x80;
    } else if ((s[0] & 0xf0) == 0xe0) {
        len = 3, cp = s[0] & 0x0f, min = 0x800;
    } else if ((s[0] & 0xf8) == 0xf0) {
        len = 4, cp = s[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
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
            rc = promtext_put(w, s + i, run - i);
            i = run;
            continue;
        }
        if (p[i] == '\\') {
            rc = promtext_put(w, "\\\\", 2);
            i++;
        } else if (p[i] == '\n') {
            rc = promtext_put(w, "\\n", 2);
            i++;
        } else if (p[i] == '"') {
            rc = promtext_put(w, "\\\"", 2);
            i++;
        } else {
            size_t l = promtext_utf8_len(p + i, n - i);
            if (l == 0) {
                rc = promtext_put(w, "\xef\xbf\xbd", 3);
                i++;
            } else {
                rc = promtext_put(w, s + i, l);
                i += l;
            }
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

static bool promtext_family_seen(const struct promtext *w, const char *name)
{
    size_t off = 0;
    while (off < w->names_len) {
        const char *n = w->names + off;
        if (strcmp(n, name) == 0)
            return true;
        off += strlen(n) + 1;
    }
    return false;
}

/* Remembers @a name as written; the list shares the document's cap. */
static int promtext_family_add(struct promtext *w, const char *name, size_t *off)
{
    int rc = 0;
    size_t n = strlen(name) + 1;
    if (n > w->cap || w->names_len > w->cap - n) {
        rc = -E2BIG;
        goto out;
    }
    if (w->names_len + n > w->names_alloc) {
        size_t want = w->names_alloc ? w->names_alloc * 2 : 1024;
        while (want < w->names_len + n)
            want *= 2;
        char *p = alloc_realloc(w->names, want);
        if (!p) {
            rc = -ENOMEM;
            goto out;
        }
        w->names = p;
        w->names_alloc = want;
    }
    memcpy(w->names + w->names_len, name, n);
    *off = w->names_len;
    w->names_len += n;
out:
    return rc;
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
    int rc = 0;
    struct promtext *w = alloc_calloc(1, sizeof(*w));
    if (!w) {
        rc = -ENOMEM;
        goto out;
    }
    w->cap = cap ? cap : PROMTEXT_DEFAULT_CAP;
    *out = w;
out:
    return rc;
}

void promtext_free(struct promtext *w)
{
    if (!w)
        return;
    alloc_free(w->buf);
    alloc_free(w->names);
    alloc_free(w);
}

const char *promtext_data(const struct promtext *w, size_t *len)
{
    *len = w->len;
    return w->buf ? w->buf : "";
}

int promtext_error(const struct promtext *w)
{
    return w->err;
}

int promtext_take(struct promtext *w, char **out, size_t *len)
{
    int rc = 0;
    char *p = alloc_realloc(w->buf, w->len + 1);
    if (!p) {
        rc = -ENOMEM;
        goto out;
    }
    p[w->len] = '\0';
    *out = p;
    *len = w->len;
    w->buf = NULL;
    w->len = 0;
    w->alloc = 0;
    w->names_len = 0;
    w->open = false;
    w->err = 0;
out:
    return rc;
}

/* Ends a public write: cuts back to @a start on failure, remembers running out of room. */
static int promtext_finish(struct promtext *w, size_t start, int rc)
{
    if (rc != 0) {
        w->len = start;
        if (rc == -E2BIG || rc == -ENOMEM)
            w->err = rc;
    }
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

int promtext_family(struct promtext *w, const char *name, enum promtext_type type, const char *help)
{
    size_t start = w->len;
    size_t names_start = w->names_len;
    size_t off = 0;
    const char *tname = promtext_type_name(type);
    int rc = w->err;
    if (rc != 0)
        goto out;
    if (!promtext_valid_metric_name(name) || !tname) {
        rc = -EINVAL;
        goto out;
    }
    if (promtext_family_seen(w, name)) {
        rc = -EEXIST;
        goto out;
    }
    if (help) {
        rc = promtext_puts(w, "# HELP ");
        if (rc == 0)
            rc = promtext_puts(w, name);
        if (rc == 0)
            rc = promtext_put(w, " ", 1);
        if (rc == 0)
            rc = promtext_put_escaped(w, help, false);
        if (rc == 0)
            rc = promtext_put(w, "\n", 1);
    }
    if (rc == 0)
        rc = promtext_puts(w, "# TYPE ");
    if (rc == 0)
        rc = promtext_puts(w, name);
    if (rc == 0)
        rc = promtext_put(w, " ", 1);
    if (rc == 0)
        rc = promtext_puts(w, tname);
    if (rc == 0)
        rc = promtext_put(w, "\n", 1);
    if (rc == 0)
        rc = promtext_family_add(w, name, &off);
    if (rc == 0) {
        w->open = true;
        w->family_off = off;
        w->type = type;
    } else {
        w->names_len = names_start;
    }
out:
    return promtext_finish(w, start, rc);
}

/* Whether full sample name @a name may appear in the open family. */
static bool promtext_name_in_family(const struct promtext *w, const char *name)
{
    const char *fam = w->names + w->family_off;
    size_t flen = strlen(fam);
    if (strncmp(name, fam, flen) != 0)
        return false;
    const char *rest = name + flen;
    if (*rest == '\0')
        return w->type != PROMTEXT_HISTOGRAM;
    if (w->type == PROMTEXT_HISTOGRAM && strcmp(rest, "_bucket") == 0)
        return true;
    if ((w->type == PROMTEXT_HISTOGRAM || w->type == PROMTEXT_SUMMARY) &&
        (strcmp(rest, "_sum") == 0 || strcmp(rest, "_count") == 0))
        return true;
    return false;
}

/*
 * Writes one sample line of the open family; @a extra (may be NULL) is one
 * more label after @a labels (the histogram's le). No cut-back here.
 */
static int promtext_line(struct promtext *w, const char *name, const struct promtext_label *labels,
                         size_t nlabels, const struct promtext_label *extra, double value)
{
    char full[256];
    char num[64];
    int rc = 0;
    if (!w->open) {
        rc = -EPROTO;
        goto out;
    }
    const char *fam = w->names + w->family_off;
    int n = 0;
    if (!name)
        n = snprintf(full, sizeof(full), "%s", fam);
    else if (name[0] == '_')
        n = snprintf(full, sizeof(full), "%s%s", fam, name);
    else
        n = snprintf(full, sizeof(full), "%s", name);
    if (n < 0 || (size_t)n >= sizeof(full) || !promtext_valid_metric_name(full)) {
        rc = -EINVAL;
        goto out;
    }
    if (!promtext_name_in_family(w, full)) {
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
        rc = promtext_put(w, i == 0 ? "{" : ",", 1);
        if (rc == 0)
            rc = promtext_puts(w, l->name);
        if (rc == 0)
            rc = promtext_put(w, "=\"", 2);
        if (rc == 0)
            rc = promtext_put_escaped(w, l->value, true);
        if (rc == 0)
            rc = promtext_put(w, "\"", 1);
    }
    if (rc == 0 && total > 0)
        rc = promtext_put(w, "}", 1);
    promtext_format_value(value, num, sizeof(num));
    if (rc == 0)
        rc = promtext_put(w, " ", 1);
    if (rc == 0)
        rc = promtext_puts(w, num);
    if (rc == 0)
        rc = promtext_put(w, "\n", 1);
out:
    return rc;
}

int promtext_sample(struct promtext *w, const char *name, const struct promtext_label *labels,
                    size_t nlabels, double value)
{
    size_t start = w->len;
    int rc = w->err;
    if (rc == 0)
        rc = promtext_line(w, name, labels, nlabels, NULL, value);
    return promtext_finish(w, start, rc);
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
    size_t start = w->len;
    char le[64];
    uint64_t counts[PROMTEXT_HIST_MAX_BOUNDS + 1];
    int rc = w->err;
    if (rc != 0)
        goto out;
    PYPROFD_ASSERT(h->magic == PROMTEXT_HIST_MAGIC);
    if (!w->open || w->type != PROMTEXT_HISTOGRAM) {
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
        rc = promtext_line(w, "_bucket", labels, nlabels, &extra, (double)cum);
    }
    if (rc == 0)
        rc = promtext_line(w, "_sum", labels, nlabels, NULL, sum);
    if (rc == 0)
        rc = promtext_line(w, "_count", labels, nlabels, NULL, (double)cum);
out:
    return promtext_finish(w, start, rc);
}

/* ---- process metrics ---- */

/* Reads up to @a size - 1 bytes of @a path into @a buf, NUL-terminated. Returns the length or
 * -errno. */
static ssize_t promtext_read_file(const char *path, char *buf, size_t size)
{
    ssize_t total = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        total = -errno;
        goto out;
    }
    while ((size_t)total < size - 1) {
        ssize_t n = read(fd, buf + total, size - 1 - (size_t)total);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            total = -errno;
            goto out;
        }
        if (n == 0)
            break;
        total += n;
    }
    buf[total] = '\0';
out:
    if (fd >= 0)
        close(fd);
    return total;
}

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
    char stat[4096];
    struct promtext_proc_stat st;
    int rc = 0;
    bool have_stat = promtext_read_file("/proc/self/stat", stat, sizeof(stat)) > 0 &&
                     promtext_parse_proc_stat(stat, &st) == 0;
    long tck = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    if (have_stat && tck > 0)
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
