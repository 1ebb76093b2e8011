/* SPDX-License-Identifier: MIT */
/*
 * otel_thread.h: the OpenTelemetry thread context (OTEP 4947) of each
 * sampled thread: the trace and span a publisher in the target (a native
 * library of the tracer) says the thread is in.
 *
 * The publisher exports a thread-local pointer, otel_thread_ctx_v1, in the
 * .dynsym of its library; it points to the thread's current record (or is
 * NULL):
 *
 *   trace_id[16]  span_id[8]  valid u8 (1)  trace_flags u8  attrs_size u16
 *   attrs: (key index u8, length u8, bytes)...      byte-packed, host order
 *
 * Finding the variable from outside (x86-64, glibc), once per process
 * (otel_thread_find(), between samples): the library that defines it, among
 * the files the target maps (opened as it sees them), and the GOT words the
 * dynamic linker filled for the library's own references to it, read from
 * the target. They say where the variable is in a thread whose thread
 * pointer is tp (on x86-64 glibc, the TCB: what pthread_self() returns, which
 * CPython keeps as the thread state's thread_id):
 *
 *   TLSDESC (-mtls-dialect=gnu2), resolved to static TLS: tp + the
 *            descriptor's argument (a negative offset);
 *   TLSDESC resolved to dynamic TLS: the argument points to (module id,
 *            offset): as general dynamic;
 *   general dynamic (legacy): module id and offset from two GOT words; the
 *            thread's block is dtv[module] (dtv = *(tp + 8), 16-byte entries,
 *            dtv[-1] its length), the variable at block + offset; a block
 *            the thread never allocated (-1, or past the dtv) means it never
 *            set a context;
 *   initial exec: tp + the GOT word;
 *   local exec (the executable's own variable, no relocation): tp less the
 *            executable's TLS block size (rounded as glibc does) + st_value.
 *
 * Each sample (otel_thread_sample()) then reads, for all sampled threads at
 * once, in one system call: every thread's pointer and, where the pointer
 * held a record at the last sample, that record, the pointer again and the
 * record again (the kernel copies the ranges in order). A thread whose
 * pointer moved since has its new record read the same way in a second call.
 * A record that is not valid (1), whose two copies differ or whose pointer
 * moved between the reads was being changed: counted as torn and not used
 * (no label rather than a wrong one). With the threads stopped (--blocking)
 * nothing moves: exact. The variable's place in a thread is found once per
 * thread and kept (keyed by thread pointer and TID: a dynamic block never
 * moves while its thread lives).
 *
 * The reads are bounded and go through the memread seam: nothing outside
 * the target's mappings is read. otel_thread_sample() does not allocate or
 * log. Thread safety: one thread at a time per struct otel_thread.
 */
#ifndef PYPROFD_UNWIND_OTEL_THREAD_H
#define PYPROFD_UNWIND_OTEL_THREAD_H

#include "base/compat.h"

#include "memread/memread.h"
#include "pipeline.h"

/** The OTEP's symbol. */
#define OTEL_THREAD_SYMBOL "otel_thread_ctx_v1"
/** The fixed part of a record. */
#define OTEL_THREAD_RECORD_SIZE 28u
/** Bytes of attributes read with a record (the OTEP recommends records <= 640 bytes). */
#define OTEL_THREAD_MAX_ATTRS 612u

/** How the variable is reached (the access model the library was built with). */
enum otel_thread_model {
    OTEL_TLS_NONE,
    OTEL_TLS_DESC_STATIC,  /* TLSDESC, in static TLS */
    OTEL_TLS_DESC_DYNAMIC, /* TLSDESC, in dynamically allocated TLS */
    OTEL_TLS_GD,           /* legacy general dynamic */
    OTEL_TLS_IE,           /* initial exec */
    OTEL_TLS_LE,           /* local exec: the executable's own */
};

/** "tlsdesc-static", "tlsdesc-dynamic", "general-dynamic", "initial-exec", "local-exec", "none". */
const char *otel_thread_model_name(enum otel_thread_model m);

/** Where the variable is: found once per process by otel_thread_find(). */
struct otel_thread_locator {
    enum otel_thread_model model;
    int64_t tp_offset; /* static models: the variable is at tp + tp_offset */
    uint64_t module;   /* dynamic models: the dtv index ... */
    uint64_t offset;   /* ... and the offset in that block */
    char file[256];    /* the library (as the target names it), for /targets */
};

/** Files otel_thread_find() remembers having looked at without the symbol. */
#define OTEL_THREAD_CHECKED 256u

/** What otel_thread_find() keeps between calls for one process (zero it first). */
struct otel_thread_memo {
    uint64_t checked[OTEL_THREAD_CHECKED]; /* inodes */
    size_t nchecked;
    uint64_t searches;
};

/**
 * Looks for the variable in the files process @a pid maps (under
 * @a proc_root), skipping files without thread-local storage and those
 * @a memo holds, and reads the GOT words that place it through @a mr.
 * Returns 0 with @a out filled; -ENOENT (no file defines it: not yet, or
 * never), -ENOTSUP (not x86-64, or a library that defines it without a
 * reference the reader can use) or -EPROTO (the GOT words are not a place:
 * an unresolved or corrupt descriptor) with a one-line reason in @a why;
 * -ESRCH when the process is gone; -ENOMEM. Does file I/O and allocates.
 */
PYPROFD_WARN_UNUSED int otel_thread_find(const char *proc_root, pid_t pid, struct memread *mr,
                                         struct otel_thread_memo *memo,
                                         struct otel_thread_locator *out, char *why,
                                         size_t why_len);

/** A record as read: the span and the attributes' bytes (not interpreted here). */
struct otel_thread_record {
    struct sample_span span; /* .set: valid, with a trace or a span id */
    uint8_t valid;
    uint16_t attrs_size;
};

/**
 * Parses a record's fixed part from @a buf (@a len bytes, any alignment).
 * Returns 0; -EAGAIN when its valid byte is not 1 (being written: not used);
 * -EINVAL when @a len < OTEL_THREAD_RECORD_SIZE. A valid record with all-zero
 * ids has span.set false (no span active).
 */
int otel_thread_parse_record(const void *buf, size_t len, struct otel_thread_record *out);

/**
 * Walks the attributes @a attrs (@a len bytes, the record's attrs part) as
 * the OTEP lays them out, calling @a fn for each entry whose key index is
 * below @a nkeys (others are skipped, as the OTEP asks); a later entry of the
 * same key is reported again (the last one wins: the caller's). Stops where
 * the rest cannot hold a whole entry. Returns the number of entries seen.
 */
size_t otel_thread_attrs(const uint8_t *attrs, size_t len, size_t nkeys,
                         void (*fn)(void *arg, uint8_t key, const char *value, size_t vlen),
                         void *arg);

/** Counts of one reader (cumulative). */
struct otel_thread_stats {
    uint64_t threads;     /* thread samples looked at */
    uint64_t spans;       /* of which in a span */
    uint64_t none;        /* no record, or a record without ids */
    uint64_t torn;        /* a record changing while read: not used */
    uint64_t unallocated; /* a dynamic block the thread never allocated */
    uint64_t faults;      /* a pointer or record that could not be read */
};

struct otel_thread;

/**
 * A reader for the process behind @a mr (borrowed; must outlive it) with the
 * variable at @a loc (copied). Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int otel_thread_new(struct memread *mr, const struct otel_thread_locator *loc,
                                        struct otel_thread **out);

/**
 * Reads the thread context of each thread of @a r whose status is SAMPLE_OK
 * and whose thread_id (the thread pointer) is set. Returns the spans, indexed
 * as r->threads (others have .set false), owned by @a t until its next
 * sample. Never fails as a whole: what could not be read is counted.
 */
const struct sample_span *otel_thread_sample(struct otel_thread *t, const struct unwind_result *r);

/** The locator in use. */
const struct otel_thread_locator *otel_thread_locator_of(const struct otel_thread *t);

/** Its counts. */
struct otel_thread_stats otel_thread_stats(const struct otel_thread *t);

/** Frees; NULL is a no-op. */
void otel_thread_free(struct otel_thread *t);

#endif /* PYPROFD_UNWIND_OTEL_THREAD_H */
