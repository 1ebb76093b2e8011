/* SPDX-License-Identifier: MIT */
/*
 * otel_process.c: the OpenTelemetry process context (see otel_process.h).
 */
#include "base/compat.h"

#include <stdatomic.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "discovery/otel_process.h"
#include "opentelemetry/proto/processcontext/v1development/process_context.pb-c.h"

static const char *const otel_process_fail_names[OTEL_PROCESS_FAILS] = {
    "ok", "absent", "bad_header", "version", "torn", "too_big", "bad_payload", "read_fault",
};

const char *otel_process_fail_name(enum otel_process_fail f)
{
    return (unsigned)f < OTEL_PROCESS_FAILS ? otel_process_fail_names[f] : "?";
}

static uint32_t otel_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint64_t otel_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

enum otel_process_fail otel_process_parse_header(const void *buf, struct otel_process_header *out)
{
    const unsigned char *b = buf;
    *out = (struct otel_process_header){0};
    if (memcmp(b, "OTEL_CTX", 8) != 0)
        return OTEL_PROCESS_BAD_HEADER;
    out->version = otel_u32(b + 8);
    out->payload_size = otel_u32(b + 12);
    out->published_ns = otel_u64(b + 16);
    out->payload = otel_u64(b + 24);
    if (out->version != 1 && out->version != 2)
        return OTEL_PROCESS_VERSION;
    if (out->published_ns == 0)
        return OTEL_PROCESS_TORN; /* the publisher is writing */
    if (out->payload_size == 0 || out->payload == 0)
        return OTEL_PROCESS_BAD_HEADER;
    if (out->payload_size > OTEL_PROCESS_MAX_PAYLOAD)
        return OTEL_PROCESS_TOO_BIG;
    return OTEL_PROCESS_OK;
}

/* ---- the payload's shape, checked before protobuf-c decodes it --------------- */

/*
 * protobuf-c decodes nested messages by recursion, without a depth limit, and
 * AnyValue nests itself (arrays of arrays, lists of lists): a payload of
 * nested length prefixes would take the agent's stack. So the wire format is
 * walked first, with the ProcessContext schema's message fields only, and a
 * payload nested deeper than the cap or malformed (a varint past 10 bytes, a
 * length past the end, a group) is refused before protobuf-c sees it.
 */
enum otel_msg {
    OTEL_MSG_NONE,
    OTEL_MSG_CONTEXT,  /* ProcessContext */
    OTEL_MSG_RESOURCE, /* Resource */
    OTEL_MSG_KEYVALUE, /* KeyValue */
    OTEL_MSG_ANYVALUE, /* AnyValue */
    OTEL_MSG_ARRAY,    /* ArrayValue */
    OTEL_MSG_KVLIST,   /* KeyValueList */
};

/* The message type of field @field of message @m (NONE: not a message). */
static enum otel_msg otel_child(enum otel_msg m, uint64_t field)
{
    switch (m) {
    case OTEL_MSG_CONTEXT:
        return field == 1 ? OTEL_MSG_RESOURCE : field == 2 ? OTEL_MSG_KEYVALUE : OTEL_MSG_NONE;
    case OTEL_MSG_RESOURCE:
        return field == 1 ? OTEL_MSG_KEYVALUE : OTEL_MSG_NONE; /* entity_refs: strings only */
    case OTEL_MSG_KEYVALUE:
        return field == 2 ? OTEL_MSG_ANYVALUE : OTEL_MSG_NONE;
    case OTEL_MSG_ANYVALUE:
        return field == 5 ? OTEL_MSG_ARRAY : field == 6 ? OTEL_MSG_KVLIST : OTEL_MSG_NONE;
    case OTEL_MSG_ARRAY:
        return field == 1 ? OTEL_MSG_ANYVALUE : OTEL_MSG_NONE;
    case OTEL_MSG_KVLIST:
        return field == 1 ? OTEL_MSG_KEYVALUE : OTEL_MSG_NONE;
    case OTEL_MSG_NONE:
    default:
        return OTEL_MSG_NONE;
    }
}

static bool otel_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 0);
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* Message @m in [p, end) at nesting @depth: well formed and within the cap.
 * The nesting is bounded by the cap, so is this recursion. */
static bool otel_shape(enum otel_msg m, const unsigned char *p, const unsigned char *end,
                       unsigned depth)
{
    /* ProcessContext, Resource, KeyValue, then two messages (AnyValue and
     * ArrayValue or KeyValueList) per level of nesting */
    if (depth > 3 + 2 * OTEL_PROCESS_MAX_DEPTH)
        return false;
    while (p < end) {
        uint64_t key, v;
        if (!otel_varint(&p, end, &key) || key >> 3 == 0)
            return false;
        switch (key & 7) {
        case 0:
            if (!otel_varint(&p, end, &v))
                return false;
            break;
        case 1:
            if (end - p < 8)
                return false;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return false;
            p += 4;
            break;
        case 2: {
            if (!otel_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return false;
            enum otel_msg c = otel_child(m, key >> 3);
            if (c != OTEL_MSG_NONE && !otel_shape(c, p, p + v, depth + 1))
                return false;
            p += v;
            break;
        }
        default:
            return false; /* groups (3, 4) and the reserved types */
        }
    }
    return true;
}

/* ---- decoding ----------------------------------------------------------------- */

static void *otel_pb_alloc(void *data, size_t size)
{
    (void)data;
    return alloc_malloc(size);
}

static void otel_pb_free(void *data, void *p)
{
    (void)data;
    alloc_free(p);
}

static ProtobufCAllocator otel_pb_allocator = {
    .alloc = otel_pb_alloc,
    .free = otel_pb_free,
    .allocator_data = NULL,
};

/* A copy of @n bytes of @s, valid UTF-8, at most @max bytes (cut on a boundary). */
static char *otel_text(const char *s, size_t n, size_t max)
{
    char *out = alloc_malloc(max + 1);
    if (out)
        (void)utf8_sanitize(out, max + 1, s, n);
    return out;
}

/* A scalar AnyValue as text into @buf; false for arrays, lists, bytes and unset. */
static bool otel_scalar(const Opentelemetry__Proto__Common__V1__AnyValue *v, char *buf, size_t cap,
                        const char **text, size_t *len)
{
    if (!v)
        return false;
    switch (v->value_case) {
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
        *text = v->string_value ? v->string_value : "";
        *len = strlen(*text);
        return true;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
        *text = v->bool_value ? "true" : "false";
        *len = strlen(*text);
        return true;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
        *len = (size_t)snprintf(buf, cap, "%" PRId64, (int64_t)v->int_value);
        *text = buf;
        return true;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
        *len = (size_t)snprintf(buf, cap, "%.17g", v->double_value);
        *text = buf;
        return true;
    default:
        return false;
    }
}

static bool otel_keep_attr(struct otel_process *out, const char *key, const char *value,
                           size_t vlen)
{
    for (size_t i = 0; i < out->nresource; i++) {
        if (strcmp(out->resource[i].key, key) == 0)
            return true; /* the first of a repeated key */
    }
    struct otel_attr *a = &out->resource[out->nresource];
    a->key = otel_text(key, strlen(key), OTEL_PROCESS_MAX_KEY);
    a->value = otel_text(value, vlen, OTEL_PROCESS_MAX_VALUE);
    if (!a->key || !a->value) {
        alloc_free(a->key);
        alloc_free(a->value);
        *a = (struct otel_attr){0};
        return false;
    }
    out->nresource++;
    return true;
}

/* The thread context's keys (OTEP 4947) among ProcessContext.attributes. */
static bool otel_threadlocal(struct otel_process *out,
                             const Opentelemetry__Proto__Common__V1__KeyValue *kv)
{
    if (!kv->key)
        return true;
    const Opentelemetry__Proto__Common__V1__AnyValue *v = kv->value;
    if (strcmp(kv->key, "threadlocal.schema_version") == 0 && v &&
        v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
        v->string_value && !out->schema) {
        out->schema = otel_text(v->string_value, strlen(v->string_value), OTEL_PROCESS_MAX_KEY);
        return out->schema != NULL;
    }
    if (strcmp(kv->key, "threadlocal.attribute_key_map") == 0 && v &&
        v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE &&
        v->array_value && !out->keys) {
        size_t n = v->array_value->n_values;
        if (n > OTEL_PROCESS_MAX_KEYS)
            n = OTEL_PROCESS_MAX_KEYS; /* indices are a uint8: more are unreachable */
        out->keys = alloc_calloc(n ? n : 1, sizeof(*out->keys));
        if (!out->keys)
            return false;
        for (size_t i = 0; i < n; i++) {
            const Opentelemetry__Proto__Common__V1__AnyValue *k = v->array_value->values[i];
            const char *s =
                k &&
                        k->value_case ==
                            OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE &&
                        k->string_value
                    ? k->string_value
                    : ""; /* a key that is not a string names nothing */
            out->keys[i] = otel_text(s, strlen(s), OTEL_PROCESS_MAX_KEY);
            if (!out->keys[i])
                return false;
            out->nkeys = i + 1;
        }
    }
    return true;
}

enum otel_process_fail otel_process_decode(const void *buf, size_t len, struct otel_process *out,
                                           bool *nomem)
{
    *out = (struct otel_process){0};
    *nomem = false;
    if (len > OTEL_PROCESS_MAX_PAYLOAD)
        return OTEL_PROCESS_TOO_BIG;
    if (!otel_shape(OTEL_MSG_CONTEXT, buf, (const unsigned char *)buf + len, 0))
        return OTEL_PROCESS_BAD_PAYLOAD;
    Opentelemetry__Proto__Processcontext__V1development__ProcessContext *pc =
        opentelemetry__proto__processcontext__v1development__process_context__unpack(
            &otel_pb_allocator, len, buf);
    if (!pc)
        return OTEL_PROCESS_BAD_PAYLOAD; /* (or out of memory: protobuf-c does not say) */
    bool ok = true;
    const Opentelemetry__Proto__Resource__V1__Resource *r = pc->resource;
    size_t n = r ? r->n_attributes : 0;
    out->resource = alloc_calloc(OTEL_PROCESS_MAX_ATTRS, sizeof(*out->resource));
    ok = out->resource != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        const Opentelemetry__Proto__Common__V1__KeyValue *kv = r->attributes[i];
        char num[64];
        const char *text;
        size_t tlen;
        if (!kv->key || !*kv->key || !otel_scalar(kv->value, num, sizeof(num), &text, &tlen) ||
            out->nresource == OTEL_PROCESS_MAX_ATTRS) {
            out->dropped++;
            continue;
        }
        ok = otel_keep_attr(out, kv->key, text, tlen);
    }
    for (size_t i = 0; ok && i < pc->n_attributes; i++)
        ok = otel_threadlocal(out, pc->attributes[i]);
    opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(
        pc, &otel_pb_allocator);
    if (!ok) {
        otel_process_release(out);
        *nomem = true;
        return OTEL_PROCESS_BAD_PAYLOAD;
    }
    return OTEL_PROCESS_OK;
}

/* ---- reading it from a process -------------------------------------------------- */

int otel_process_find(const struct proc_maps *maps, uint64_t *raddr)
{
    static const char *const names[] = {"[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]",
                                        "/memfd:OTEL_CTX"};
    for (size_t i = 0; i < proc_maps_count(maps); i++) {
        const struct proc_map_entry *e = proc_maps_get(maps, i);
        if (!(e->perms & PROC_MAP_READ) || e->end - e->start < OTEL_PROCESS_HEADER_SIZE)
            continue;
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(names); k++) {
            if (strncmp(e->path, names[k], strlen(names[k])) == 0) {
                *raddr = e->start;
                return 0;
            }
        }
    }
    return -ENOENT;
}

enum otel_process_fail otel_process_read(struct memread *mr, uint64_t header_raddr,
                                         struct otel_process *out, bool *gone)
{
    *out = (struct otel_process){0};
    *gone = false;
    enum otel_process_fail why = OTEL_PROCESS_TORN;
    unsigned char *payload = NULL;
    for (int attempt = 0; attempt < 3 && why == OTEL_PROCESS_TORN; attempt++) {
        unsigned char h[OTEL_PROCESS_HEADER_SIZE];
        struct otel_process_header hd;
        int err = memread_read(mr, header_raddr, h, sizeof(h));
        if (err) {
            *gone = err == -ESRCH;
            why = OTEL_PROCESS_READ_FAULT;
            break;
        }
        why = otel_process_parse_header(h, &hd);
        if (why != OTEL_PROCESS_OK)
            continue; /* torn: again; anything else ends the loop */
        atomic_thread_fence(memory_order_seq_cst);
        alloc_free(payload);
        payload = alloc_malloc(hd.payload_size);
        if (!payload) {
            why = OTEL_PROCESS_BAD_PAYLOAD;
            break;
        }
        uint64_t again = 0;
        err = memread_read(mr, hd.payload, payload, hd.payload_size);
        atomic_thread_fence(memory_order_seq_cst); /* the timestamp after the payload */
        if (!err)
            err = memread_read(mr, header_raddr + 16, &again, sizeof(again));
        if (err) {
            *gone = err == -ESRCH;
            why = OTEL_PROCESS_READ_FAULT;
            break;
        }
        if (again != hd.published_ns) {
            why = OTEL_PROCESS_TORN;
            continue;
        }
        bool nomem;
        why = otel_process_decode(payload, hd.payload_size, out, &nomem);
        out->header_raddr = header_raddr;
        out->published_ns = hd.published_ns;
    }
    alloc_free(payload);
    if (why != OTEL_PROCESS_OK)
        otel_process_release(out);
    return why;
}

int otel_process_changed(struct memread *mr, uint64_t header_raddr, uint64_t published_ns)
{
    uint64_t now;
    int err = memread_read(mr, header_raddr + 16, &now, sizeof(now));
    if (err)
        return err;
    return now != published_ns;
}

enum otel_process_fail otel_process_locate(const char *proc_root, pid_t pid, struct memread *mr,
                                           struct otel_process *out, bool *gone)
{
    *out = (struct otel_process){0};
    *gone = false;
    struct proc_maps *maps = NULL;
    int err = proc_maps_read(proc_root, pid, &maps);
    if (err) {
        *gone = err == -ESRCH;
        return *gone ? OTEL_PROCESS_READ_FAULT : OTEL_PROCESS_ABSENT;
    }
    uint64_t raddr = 0;
    err = otel_process_find(maps, &raddr);
    proc_maps_free(maps);
    if (err)
        return OTEL_PROCESS_ABSENT;
    return otel_process_read(mr, raddr, out, gone);
}

const char *otel_process_get(const struct otel_process *c, const char *key)
{
    for (size_t i = 0; i < c->nresource; i++) {
        if (strcmp(c->resource[i].key, key) == 0)
            return c->resource[i].value;
    }
    return NULL;
}

int otel_process_meta_labels(const struct otel_process *c, struct labels *meta)
{
    char name[sizeof(OTEL_PROCESS_LABEL_PREFIX) + OTEL_PROCESS_MAX_KEY];
    size_t pre = strlen(OTEL_PROCESS_LABEL_PREFIX);
    memcpy(name, OTEL_PROCESS_LABEL_PREFIX, pre);
    for (size_t i = 0; i < c->nresource; i++) {
        const char *k = c->resource[i].key;
        size_t n = 0;
        for (; k[n] && pre + n < sizeof(name) - 1; n++) {
            char ch = k[n];
            bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '_';
            name[pre + n] = ok ? ch : '_';
        }
        name[pre + n] = '\0';
        if (labels_get(meta, name))
            continue; /* two keys alike once sanitised: the first wins */
        int err = labels_set(meta, name, c->resource[i].value);
        if (err)
            return err;
    }
    if (c->schema) {
        int err = labels_set(meta, "__meta_otel_threadlocal_schema", c->schema);
        if (err)
            return err;
    }
    return 0;
}

void otel_process_release(struct otel_process *c)
{
    for (size_t i = 0; c->resource && i < c->nresource; i++) {
        alloc_free(c->resource[i].key);
        alloc_free(c->resource[i].value);
    }
    alloc_free(c->resource);
    for (size_t i = 0; c->keys && i < c->nkeys; i++)
        alloc_free(c->keys[i]);
    alloc_free(c->keys);
    alloc_free(c->schema);
    *c = (struct otel_process){0};
}
