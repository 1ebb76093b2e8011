/* SPDX-License-Identifier: MIT */
/*
 * promtext.h: a writer for the Prometheus text exposition format, version
 * 0.0.4 (what GET /metrics serves with Content-Type
 * PROMTEXT_CONTENT_TYPE), plus a fixed-bucket histogram value type and the
 * standard process_* metrics of the calling process.
 *
 * Usage: promtext_family() opens a metric family, then promtext_sample() /
 * promtext_histogram() write samples of it, until another family is opened.
 * A family may be opened again later, by any writer of the same document
 * (say, one exporter after another, each with its own label set): its samples
 * are appended to it. The document is put together when it is read
 * (promtext_data(), promtext_take()): family after family in the order they
 * were first opened, each as its # HELP line (when the first opening gave a
 * help text), its # TYPE line and all its samples, contiguous. The writer
 * enforces what consumers (Prometheus, `promtool check metrics`) require:
 *  - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 *    [a-zA-Z_][a-zA-Z0-9_]* and do not start with "__" (reserved);
 *  - every family appears once, all its lines together, with one type:
 *    opening a family again with another type is -EEXIST; the help text is
 *    the first opening's (a later one is ignored);
 *  - a sample belongs to the open family: its name is the family name, or
 *    for a histogram the family name plus _bucket, _sum or _count, for a
 *    summary plus _sum or _count (-EPROTO otherwise, or when no family is open);
 *  - label values escape \\, \" and newline; HELP text escapes \\ and newline;
 *    invalid UTF-8 in either is replaced by U+FFFD, so output is always UTF-8;
 *  - values: integers print without exponent or fraction (up to 2^53),
 *    other finite values as the shortest %g form that reads back exactly,
 *    and +Inf, -Inf, NaN;
 *  - every line ends in '\n'.
 * Not checked: that two samples of a family differ in their labels (each
 * writer keeps its label values apart, e.g. by an endpoint label).
 *
 * Errors: each call either adds whole lines or nothing. -EINVAL (bad name,
 * bad label), -EEXIST and -EPROTO leave the document as it was and are not
 * remembered. Running out of room is: once a call fails with -E2BIG (the
 * document would exceed the cap given to promtext_new()) or -ENOMEM, every
 * later write fails with the same error and promtext_error() reports it, so a
 * caller may write a whole document and check once at the end.
 *
 * Ownership: struct promtext is opaque, created by promtext_new(), freed by
 * promtext_free(). Thread safety: a writer is used by one thread at a time.
 * struct promtext_hist is safe to observe from any number of threads at once
 * (atomic counters) while another thread writes it out.
 */
#ifndef PYPROFD_BASE_PROMTEXT_H
#define PYPROFD_BASE_PROMTEXT_H

#include "base/compat.h"

#include <stdatomic.h>

/** The Content-Type of a document written by this module. */
#define PROMTEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/** Default cap of a document: 8 MiB. */
#define PROMTEXT_DEFAULT_CAP ((size_t)8 << 20)

enum promtext_type {
    PROMTEXT_COUNTER,
    PROMTEXT_GAUGE,
    PROMTEXT_HISTOGRAM,
    PROMTEXT_SUMMARY,
    PROMTEXT_UNTYPED,
};

/** One label pair; both strings borrowed for the duration of the call. */
struct promtext_label {
    const char *name;
    const char *value;
};

/**
 * Expands to the two arguments `labels, nlabels` for a literal list of pairs:
 * promtext_sample(w, NULL, PROMTEXT_LABELS({"job", "web"}, {"reason", "esrch"}), 3).
 */
#define PROMTEXT_LABELS(...)                                                                       \
    ((const struct promtext_label[]){__VA_ARGS__}),                                                \
        PYPROFD_ARRAY_SIZE(((const struct promtext_label[]){__VA_ARGS__}))

struct promtext;

/**
 * Creates an empty writer whose document may grow to @a cap bytes (0:
 * PROMTEXT_DEFAULT_CAP). Returns 0 and stores the writer in @a out (the
 * caller owns it), or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int promtext_new(size_t cap, struct promtext **out);
/** Frees the writer and its document; NULL is a no-op. */
void promtext_free(struct promtext *w);

/**
 * Opens family @a name of @a type. The first time, it gets the lines
 * "# HELP name help" (skipped when @a help is NULL) and "# TYPE name type";
 * afterwards the samples written go after those it already has. Returns 0,
 * -EINVAL (bad name or type), -EEXIST (the family exists with another type;
 * the open family is then unchanged), -E2BIG or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int promtext_family(struct promtext *w, const char *name,
                                        enum promtext_type type, const char *help);

/**
 * Writes one sample of the open family: `name{labels} value`. @a name is
 * NULL for the family name itself, a suffix starting with '_' (e.g. "_sum")
 * appended to the family name, or a full metric name. @a labels (may be NULL
 * when @a nlabels is 0) are written in the order given; names must be unique
 * (not checked: keep them fixed in code). Returns 0, -EINVAL, -EPROTO,
 * -E2BIG or -ENOMEM (see the top of this file).
 */
PYPROFD_WARN_UNUSED int promtext_sample(struct promtext *w, const char *name,
                                        const struct promtext_label *labels, size_t nlabels,
                                        double value);

/**
 * The document written so far, put together as promtext_take() would
 * (NUL-terminated; borrowed, valid until the next call on @a w). @a len
 * receives its length. Returns NULL (and 0 in @a len) when there is no
 * memory to put it together.
 */
const char *promtext_data(struct promtext *w, size_t *len);

/**
 * Hands the document to the caller: stores a NUL-terminated buffer (free with
 * alloc_free()) in @a out and its length without the NUL in @a len, and
 * leaves the writer empty (families forgotten, error cleared). Returns 0 or
 * -ENOMEM (writer unchanged).
 */
PYPROFD_WARN_UNUSED int promtext_take(struct promtext *w, char **out, size_t *len);

/** 0, or the sticky -E2BIG / -ENOMEM that made the document incomplete. */
int promtext_error(const struct promtext *w);

/** Formats @a v as the exposition format wants it into @a buf (>= 32 bytes). */
void promtext_format_value(double v, char *buf, size_t size);

/*
 * Fixed-bucket histogram, embeddable (e.g. in the daemon's stats struct).
 * The fields are private to promtext.c. Bounds are upper bounds ("le"),
 * strictly increasing and finite; the +Inf bucket is implicit.
 */
#define PROMTEXT_HIST_MAX_BOUNDS 32

struct promtext_hist {
    uint32_t magic; /* private: set by promtext_hist_init() */
    uint32_t nbounds;
    double bounds[PROMTEXT_HIST_MAX_BOUNDS];
    _Atomic uint64_t counts[PROMTEXT_HIST_MAX_BOUNDS + 1]; /* not cumulative; last = +Inf */
    _Atomic uint64_t sum_bits;                             /* the double sum, as bits */
};

/** Exponential seconds buckets from 1 ms to 60 s, for durations. */
extern const double promtext_buckets_seconds[];
extern const size_t promtext_buckets_seconds_count;
/** Bytes buckets by powers of 4 from 1 KiB to 64 MiB, for sizes. */
extern const double promtext_buckets_bytes[];
extern const size_t promtext_buckets_bytes_count;

/**
 * Initialises @a h with a copy of @a bounds (@a n of them, 1..
 * PROMTEXT_HIST_MAX_BOUNDS, finite and strictly increasing) and zero counts.
 * Returns 0 or -EINVAL (@a h then zeroed). Not thread-safe: call before
 * sharing @a h.
 */
PYPROFD_WARN_UNUSED int promtext_hist_init(struct promtext_hist *h, const double *bounds, size_t n);

/** Counts one observation @a v (NaN is ignored). Thread-safe, lock-free. */
void promtext_hist_observe(struct promtext_hist *h, double v);

/**
 * Writes @a h as samples of the open histogram family: cumulative
 * _bucket{labels...,le="..."} lines ending with le="+Inf", then _sum and
 * _count with @a labels. @a labels must not contain "le". The +Inf bucket
 * and _count are the same number even while other threads observe. Returns
 * as promtext_sample(), and -EPROTO when the open family is not a histogram.
 */
PYPROFD_WARN_UNUSED int promtext_histogram(struct promtext *w, const struct promtext_label *labels,
                                           size_t nlabels, const struct promtext_hist *h);

/**
 * Writes the standard process_* families of the calling process, read from
 * /proc/self, /proc/stat and getrlimit(): process_cpu_seconds_total,
 * process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_start_time_seconds, process_threads, process_open_fds,
 * process_max_fds. A value that cannot be read is left out, never guessed.
 * Returns 0 or a writer error (-EEXIST when one of them was already written:
 * they describe this one process, so they appear once).
 */
PYPROFD_WARN_UNUSED int promtext_process_metrics(struct promtext *w);

/* Internal: the fields of /proc/PID/stat that promtext_process_metrics() uses. */
struct promtext_proc_stat {
    uint64_t utime_ticks, stime_ticks, threads, start_ticks, vsize_bytes, rss_pages;
};

#ifdef PYPROFD_UNITTEST
/* promtext.c internals reached by tests/unit/exporters/pull/test_promtext.c */
int promtext_parse_proc_stat(const char *text, struct promtext_proc_stat *out);
#endif

#endif /* PYPROFD_BASE_PROMTEXT_H */
