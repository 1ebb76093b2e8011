/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the OpenTelemetry process context a target publishes
 * (discovery/otel_process.c). The input is a 32-byte OTEL_CTX header and the
 * payload after it. The header is parsed; the payload decoded as a
 * ProcessContext (nesting, lengths, caps) from an exact-size copy, so a read
 * past it is ASan's to catch; what is kept is bounded, valid UTF-8, and makes
 * valid label names; and the same bytes are read by the OTEP's protocol from
 * a fake process image, where the header's size must agree with what is
 * mapped.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/labels.h"
#include "base/utf8.h"
#include "discovery/otel_process.h"
#include "memread_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_HEADER_RADDR  0x7f0000001000ull
#define FUZZ_PAYLOAD_RADDR 0x7f0000100000ull

static void check_kept(const struct otel_process *c)
{
    PYPROFD_ASSERT(c->nresource <= OTEL_PROCESS_MAX_ATTRS);
    PYPROFD_ASSERT(c->nkeys <= OTEL_PROCESS_MAX_KEYS);
    for (size_t i = 0; i < c->nresource; i++) {
        const struct otel_attr *a = &c->resource[i];
        size_t kl = strlen(a->key), vl = strlen(a->value);
        PYPROFD_ASSERT(kl > 0 && kl <= OTEL_PROCESS_MAX_KEY && utf8_valid(a->key, kl));
        PYPROFD_ASSERT(vl <= OTEL_PROCESS_MAX_VALUE && utf8_valid(a->value, vl));
        PYPROFD_ASSERT(otel_process_get(c, a->key) != NULL);
    }
    for (size_t i = 0; i < c->nkeys; i++) {
        size_t kl = strlen(c->keys[i]);
        PYPROFD_ASSERT(kl <= OTEL_PROCESS_MAX_KEY && utf8_valid(c->keys[i], kl));
    }
    if (c->schema)
        PYPROFD_ASSERT(utf8_valid(c->schema, strlen(c->schema)));
    struct labels meta;
    labels_init(&meta);
    if (otel_process_meta_labels(c, &meta) == 0) {
        PYPROFD_ASSERT(meta.n <= c->nresource + (c->schema != NULL));
        for (size_t i = 0; i < meta.n; i++)
            PYPROFD_ASSERT(labels_valid_name(meta.v[i].name));
    }
    labels_release(&meta);
}

static void check_refused(const struct otel_process *c)
{
    PYPROFD_ASSERT(c->resource == NULL && c->nresource == 0 && c->keys == NULL && c->nkeys == 0 &&
                   c->schema == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < OTEL_PROCESS_HEADER_SIZE)
        return 0;
    struct otel_process_header hd;
    enum otel_process_fail hf = otel_process_parse_header(data, &hd);
    PYPROFD_ASSERT((unsigned)hf < OTEL_PROCESS_FAILS);
    if (hf == OTEL_PROCESS_OK)
        PYPROFD_ASSERT(hd.payload_size > 0 && hd.payload_size <= OTEL_PROCESS_MAX_PAYLOAD &&
                       hd.payload != 0 && hd.published_ns != 0);

    /* the payload alone, from a copy of exactly its size */
    size_t len = size - OTEL_PROCESS_HEADER_SIZE;
    unsigned char *payload = alloc_malloc(len ? len : 1);
    if (!payload)
        return 0;
    memcpy(payload, data + OTEL_PROCESS_HEADER_SIZE, len);
    struct otel_process c;
    bool nomem = false;
    enum otel_process_fail f = otel_process_decode(payload, len, &c, &nomem);
    if (f == OTEL_PROCESS_OK)
        check_kept(&c);
    else
        check_refused(&c);
    otel_process_release(&c);
    check_refused(&c);

    /* read from a process: the header as given, its payload where it points
     * (when the two do not overlap: the image's newer segment would win) */
    bool apart = hd.payload >= FUZZ_HEADER_RADDR + OTEL_PROCESS_HEADER_SIZE ||
                 (len <= FUZZ_HEADER_RADDR && hd.payload <= FUZZ_HEADER_RADDR - len);
    if (hf == OTEL_PROCESS_OK && apart) {
        struct memread_fake *fake;
        struct memread *mr;
        if (memread_fake_open(&fake, &mr) == 0) {
            bool gone = true;
            if (memread_fake_add(fake, FUZZ_HEADER_RADDR, data, OTEL_PROCESS_HEADER_SIZE) == 0 &&
                memread_fake_add(fake, hd.payload, payload, len) == 0) {
                enum otel_process_fail rf = otel_process_read(mr, FUZZ_HEADER_RADDR, &c, &gone);
                PYPROFD_ASSERT(!gone);
                if (rf == OTEL_PROCESS_OK) {
                    PYPROFD_ASSERT(hd.payload_size <= len); /* only what is mapped is read */
                    PYPROFD_ASSERT(c.published_ns == hd.published_ns);
                    check_kept(&c);
                } else {
                    check_refused(&c);
                }
                otel_process_release(&c);
                int ch = otel_process_changed(mr, FUZZ_HEADER_RADDR, hd.published_ns);
                PYPROFD_ASSERT(ch == 0);
            }
            memread_free(mr);
        }
    }
    alloc_free(payload);
    return 0;
}
