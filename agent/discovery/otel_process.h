/* SPDX-License-Identifier: MIT */
/*
 * otel_process.h: the OpenTelemetry process context a target publishes
 * (OTEP 4719): a mapping named OTEL_CTX ("/memfd:OTEL_CTX",
 * "[anon_shmem:OTEL_CTX]" or "[anon:OTEL_CTX]" in its maps) whose 32-byte
 * header points to a protobuf ProcessContext (opentelemetry-proto 1.11,
 * processcontext/v1development: the SDK's Resource, and attributes for outside
 * readers, among them the thread context's threadlocal.* keys, OTEP 4947).
 *
 *   header   "OTEL_CTX"  u32 version (2; 1 in development)  u32 payload_size
 *            u64 monotonic_published_at_ns (CLOCK_BOOTTIME; 0 while written)
 *            u64 payload (an address in the target)
 *
 * Reading follows the OTEP's protocol: header, payload, then the timestamp
 * again; a timestamp of 0 or one that moved means the publisher was writing
 * (a torn read): read again, a bounded number of times. The timestamp is also
 * the cache key: otel_process_check() reads the 32-byte header alone and says
 * whether the context changed since.
 *
 * Everything comes from the target: the header is checked, the payload
 * bounded (OTEL_PROCESS_MAX_PAYLOAD), its nesting checked before protobuf-c
 * sees it (OTEL_PROCESS_MAX_DEPTH: protobuf-c recurses without a limit), the
 * attributes kept bounded in number and length, and every failure has a
 * reason (enum otel_process_fail) the agent counts. Reads go through the
 * memread seam, so nothing outside the target's mappings is ever read.
 *
 * Ownership: struct otel_process owns its strings (otel_process_release()).
 * Thread safety: no shared state; one struct per thread at a time.
 */
#ifndef PYPROFD_DISCOVERY_OTEL_PROCESS_H
#define PYPROFD_DISCOVERY_OTEL_PROCESS_H

#include "base/compat.h"

#include "base/labels.h"
#include "discovery/proc_maps.h"
#include "memread/memread.h"

#define OTEL_PROCESS_HEADER_SIZE 32u
#define OTEL_PROCESS_MAX_PAYLOAD (256u << 10) /* bytes: resources are a few KiB */
#define OTEL_PROCESS_MAX_DEPTH   16u          /* AnyValue arrays/lists within each other */
#define OTEL_PROCESS_MAX_ATTRS   64u          /* resource attributes kept */
#define OTEL_PROCESS_MAX_KEYS    256u         /* threadlocal.attribute_key_map (uint8 indices) */
#define OTEL_PROCESS_MAX_VALUE   256u         /* bytes of a kept value (cut on a UTF-8 boundary) */
#define OTEL_PROCESS_MAX_KEY     128u         /* bytes of a kept key */

/** Why a process context was not read (the agent's metric's reason label). */
enum otel_process_fail {
    OTEL_PROCESS_OK,
    OTEL_PROCESS_ABSENT,      /* no OTEL_CTX mapping */
    OTEL_PROCESS_BAD_HEADER,  /* signature, size or pointer wrong */
    OTEL_PROCESS_VERSION,     /* a version this reader does not know */
    OTEL_PROCESS_TORN,        /* still being written after the retries */
    OTEL_PROCESS_TOO_BIG,     /* payload over OTEL_PROCESS_MAX_PAYLOAD */
    OTEL_PROCESS_BAD_PAYLOAD, /* not a ProcessContext, or nested too deep */
    OTEL_PROCESS_READ_FAULT,  /* the header or payload could not be read */
    OTEL_PROCESS_FAILS
};

/** "absent", "bad_header", ... (the metric's reason label). */
const char *otel_process_fail_name(enum otel_process_fail f);

/** The header, as read. */
struct otel_process_header {
    uint32_t version;
    uint32_t payload_size;
    uint64_t published_ns; /* 0: being written */
    uint64_t payload;      /* address in the target */
};

/**
 * Checks @a buf (OTEL_PROCESS_HEADER_SIZE bytes, any alignment) and fills
 * @a out. Returns OTEL_PROCESS_OK, OTEL_PROCESS_BAD_HEADER (signature; a
 * payload of 0 bytes or at address 0), OTEL_PROCESS_VERSION (not 1 or 2),
 * OTEL_PROCESS_TOO_BIG, or OTEL_PROCESS_TORN (timestamp 0).
 */
enum otel_process_fail otel_process_parse_header(const void *buf, struct otel_process_header *out);

struct otel_attr {
    char *key;
    char *value; /* scalars as text (bool "true"/"false", numbers in decimal) */
};

/** What a ProcessContext says that pyprofd uses. */
struct otel_process {
    uint64_t header_raddr;      /* where the header is (0: not read from a process) */
    uint64_t published_ns;      /* the header's timestamp: the cache key */
    struct otel_attr *resource; /* the Resource's scalar attributes, in order */
    size_t nresource;
    size_t dropped; /* attributes left out: not scalars, or over the caps */
    char *schema;   /* threadlocal.schema_version, or NULL */
    char **keys;    /* threadlocal.attribute_key_map: index -> attribute name */
    size_t nkeys;
};

/**
 * Decodes @a len bytes of ProcessContext into @a out (zeroed first).
 * Returns OTEL_PROCESS_OK, OTEL_PROCESS_BAD_PAYLOAD or OTEL_PROCESS_TOO_BIG;
 * *@a nomem when out of memory (then OTEL_PROCESS_BAD_PAYLOAD with nothing
 * kept). Allocates.
 */
enum otel_process_fail otel_process_decode(const void *buf, size_t len, struct otel_process *out,
                                           bool *nomem);

/**
 * The OTEL_CTX mapping of @a maps: the first whose name starts with one of
 * the OTEP's three and that is readable and holds a header. Returns 0 and its
 * start, or -ENOENT.
 */
PYPROFD_WARN_UNUSED int otel_process_find(const struct proc_maps *maps, uint64_t *raddr);

/**
 * Reads the context whose header is at @a header_raddr through @a mr
 * (borrowed), by the OTEP's protocol (at most 3 tries when torn). Returns
 * OTEL_PROCESS_OK with @a out filled (caller releases), or why not;
 * -ESRCH-like ends (the process gone) are OTEL_PROCESS_READ_FAULT with
 * *@a gone set when the reader said so. Allocates.
 */
enum otel_process_fail otel_process_read(struct memread *mr, uint64_t header_raddr,
                                         struct otel_process *out, bool *gone);

/**
 * The cheap check: reads the header at @a header_raddr alone. Returns 1 when
 * its timestamp is not @a published_ns (the context changed, or is being
 * written: read it again), 0 when it is the same, or a negative memread
 * error (the mapping is gone).
 */
PYPROFD_WARN_UNUSED int otel_process_changed(struct memread *mr, uint64_t header_raddr,
                                             uint64_t published_ns);

/**
 * Finds and reads a process's context: maps of @a pid under @a proc_root,
 * then otel_process_read(). Returns OTEL_PROCESS_OK, OTEL_PROCESS_ABSENT, or
 * why it failed; *@a gone when the process is gone.
 */
enum otel_process_fail otel_process_locate(const char *proc_root, pid_t pid, struct memread *mr,
                                           struct otel_process *out, bool *gone);

/** The attribute @a key of the resource, or NULL. */
const char *otel_process_get(const struct otel_process *c, const char *key);

/** Where the discovered labels of the resource go: __meta_otel_resource_<key>. */
#define OTEL_PROCESS_LABEL_PREFIX "__meta_otel_resource_"

/**
 * Sets __meta_otel_resource_<key> in @a meta for each resource attribute,
 * the key sanitised to a label name ([a-zA-Z0-9_], every other byte '_'; a
 * key that repeats after that keeps its first value), and
 * __meta_otel_threadlocal_schema when the thread context is announced.
 * Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int otel_process_meta_labels(const struct otel_process *c, struct labels *meta);

/** Frees what @a c holds and zeroes it; a zeroed struct is a no-op. */
void otel_process_release(struct otel_process *c);

#endif /* PYPROFD_DISCOVERY_OTEL_PROCESS_H */
