/* SPDX-License-Identifier: MIT */
/*
 * pyprofd test library for otel_spans.py (issue 40): a publisher of the
 * OpenTelemetry process context (OTEP 4719) and thread context (OTEP 4947),
 * written from the two OTEPs, so that pyprofd's reader is tested against the
 * formats as specified and not against its own idea of them.
 *
 * Process context: otelpub_publish() maps a region named OTEL_CTX (a memfd,
 * or an anonymous mapping named with PR_SET_VMA_ANON_NAME), writes the
 * 32-byte header with the payload (a protobuf ProcessContext the caller
 * encodes) right behind it, and writes the timestamp last; otelpub_update()
 * follows the OTEP's update protocol with a new payload elsewhere in memory.
 *
 * Thread context: the TLS variable otel_thread_ctx_v1, exported in .dynsym,
 * points to the calling thread's current record (or is NULL).
 * otelpub_attach() builds a record in whichever of the thread's two buffers
 * is not published and then points the variable at it; otelpub_detach()
 * stores NULL.
 *
 * tests/integration/test_otel_context.py builds it three ways, one per TLS
 * access model a reader must handle (cc -O2 -shared -fPIC plus the flag).
 * What readelf -rW and readelf --dyn-syms -W showed for each (gcc 12.2,
 * binutils 2.40, Debian 12):
 *
 *   -mtls-dialect=gnu2        R_X86_64_TLSDESC   otel_thread_ctx_v1 + 0
 *   -mtls-dialect=gnu         R_X86_64_DTPMOD64  otel_thread_ctx_v1 + 0
 *                             R_X86_64_DTPOFF64  otel_thread_ctx_v1 + 0
 *   -ftls-model=initial-exec  R_X86_64_TPOFF64   otel_thread_ctx_v1 + 0
 *                             (and FLAGS STATIC_TLS in .dynamic)
 *
 * each plus relocations of the same family without a symbol, for the
 * module's own static TLS, otelpub_records and otelpub_last (gnu: one lone
 * DTPMOD64, local dynamic); and in each, .dynsym has otel_thread_ctx_v1 as
 * "8 TLS GLOBAL DEFAULT" with value 0x10: its offset in the module's TLS
 * block is not 0 (the static ones come first), which a reader must add.
 *
 * Where glibc put it when python dlopen()ed the library (read through
 * otelpub_slot_address() against otelpub_thread_pointer(), glibc 2.31,
 * 2.36 and 2.43): the TLSDESC build in static TLS, just below the thread
 * pointer (tp - 0x98 on 2.31 and 2.36, tp - 0xc8 on 2.43 with CPython
 * 3.13 and 3.14, 0xe8 with 3.15), like the initial-exec build: glibc
 * resolves a TLSDESC to static TLS when the surplus has room. The legacy build's
 * variable is in a dynamic block malloc()ed at the thread's first access
 * ([heap]), reached through the DTV only.
 *
 * Built on the host (Debian 12, glibc 2.36) and loaded by Pythons of
 * Debian 11 (glibc 2.31) and Debian testing, so it may need no symbol
 * version newer than the oldest libc that loads it (objdump -T: GLIBC_2.17,
 * clock_gettime, at most); memfd_create goes through syscall(), which needs
 * neither the libc wrapper nor headers that declare it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* older headers lack these (the values are the kernel's ABI) */
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MADV_DONTFORK
#define MADV_DONTFORK 10
#endif

#define OTELPUB_EXPORT __attribute__((visibility("default")))

/* ---- process context (OTEP 4719) ---------------------------------------- */

#define OTELPUB_NAME    "OTEL_CTX"
#define OTELPUB_VERSION 2

/* The header as the OTEP lays it out: 32 bytes, no padding, the timestamp
 * and the payload pointer 8-byte aligned (the timestamp's store must be one
 * aligned 64-bit write for readers to see it whole). */
struct otelpub_header {
    char signature[8];
    uint32_t version;
    uint32_t payload_size;
    uint64_t published_at_ns;
    uint64_t payload;
};

_Static_assert(sizeof(struct otelpub_header) == 32, "the OTEP's header is 32 bytes");
_Static_assert(offsetof(struct otelpub_header, published_at_ns) == 16, "timestamp at 16");
_Static_assert(offsetof(struct otelpub_header, payload) == 24, "payload pointer at 24");

/* One process context per process (the OTEP's singleton), written by one
 * writer at a time: the mutex orders publish and update calls from
 * different threads. */
static pthread_mutex_t otelpub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct otelpub_header *otelpub_hdr;
static size_t otelpub_map_len;
static uint64_t otelpub_last_ns;

/* Publishes @len bytes of @payload (copied) as the process context: @how 0
 * in a memfd, 1 in a named anonymous mapping. No fallback from one to the
 * other, unlike the OTEP's SDKs: a test asks for the kind it checks. A
 * second call updates. 0, or a negative errno (-EINVAL for @how 1 where the
 * kernel cannot name anonymous mappings). */
int otelpub_publish(const void *payload, uint32_t len, int how) OTELPUB_EXPORT;
/* Replaces the published payload by a copy of @payload: 0, -ENOENT if
 * nothing was published, -ENOMEM. */
int otelpub_update(const void *payload, uint32_t len) OTELPUB_EXPORT;

/* A CLOCK_BOOTTIME timestamp that is neither 0 (reserved for "being
 * written") nor the previous one (every update must change it, or a reader
 * that read across the update would take a torn payload as consistent). */
static uint64_t otelpub_timestamp(void)
{
    struct timespec ts;
    uint64_t ns = 0;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0)
        ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (ns <= otelpub_last_ns)
        ns = otelpub_last_ns + 1;
    otelpub_last_ns = ns;
    return ns;
}

/* Naming is best effort for a memfd: its mapping is named by its file,
 * "/memfd:OTEL_CTX (deleted)" once the fd is closed, and the kernel refuses
 * to name a file mapping (EINVAL). For an anonymous mapping it is the only
 * way a reader finds it, and needs CONFIG_ANON_VMA_NAME (Linux 5.17+; not
 * every kernel has it: EINVAL there too). */
static int otelpub_name(void *addr, size_t len)
{
    if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)addr, (unsigned long)len,
              (unsigned long)OTELPUB_NAME) != 0)
        return -errno;
    return 0;
}

static void *otelpub_map_memfd(size_t len)
{
    /* MFD_NOEXEC_SEAL is Linux 6.3+: older kernels refuse it (EINVAL) */
    long fd =
        syscall(SYS_memfd_create, OTELPUB_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = syscall(SYS_memfd_create, OTELPUB_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return MAP_FAILED;
    void *addr = MAP_FAILED;
    if (ftruncate((int)fd, (off_t)len) == 0)
        addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, (int)fd, 0);
    int saved = errno;
    close((int)fd); /* the mapping keeps the file: it stays /memfd:OTEL_CTX in maps */
    errno = saved;
    return addr;
}

static int otelpub_update_locked(const void *payload, uint32_t len);

int otelpub_publish(const void *payload, uint32_t len, int how)
{
    if (!payload && len)
        return -EINVAL;
    if (how != 0 && how != 1)
        return -EINVAL;
    int rc = 0;
    pthread_mutex_lock(&otelpub_lock);
    if (otelpub_hdr) { /* step 1: a context exists, so this is an update */
        rc = otelpub_update_locked(payload, len);
        goto out;
    }
    long page = sysconf(_SC_PAGESIZE);
    size_t pg = page > 0 ? (size_t)page : 4096;
    size_t need = sizeof(struct otelpub_header) + len;
    size_t map_len = (need + pg - 1) / pg * pg;
    void *addr =
        how == 0 ? otelpub_map_memfd(map_len)
                 : mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (addr == MAP_FAILED) {
        rc = -errno;
        goto out;
    }
    /* a child of fork() must not show this process's resource as its own */
    if (madvise(addr, map_len, MADV_DONTFORK) != 0) {
        rc = -errno;
        munmap(addr, map_len);
        goto out;
    }
    struct otelpub_header *h = addr;
    unsigned char *body = (unsigned char *)addr + sizeof(*h);
    if (len)
        memcpy(body, payload, len);
    memcpy(h->signature, OTELPUB_NAME, sizeof(h->signature));
    h->version = OTELPUB_VERSION;
    h->payload_size = len;
    h->payload = (uint64_t)(uintptr_t)body;
    /* everything above must be visible before the timestamp says "ready" */
    atomic_thread_fence(memory_order_seq_cst);
    __atomic_store_n(&h->published_at_ns, otelpub_timestamp(), __ATOMIC_RELAXED);
    int named = otelpub_name(addr, map_len);
    if (how == 1 && named != 0) {
        /* an unnamed anonymous mapping is one no reader can find: the OTEP
         * counts that as a failed publication */
        munmap(addr, map_len);
        rc = named;
        goto out;
    }
    otelpub_hdr = h;
    otelpub_map_len = map_len;
out:
    pthread_mutex_unlock(&otelpub_lock);
    return rc;
}

static int otelpub_update_locked(const void *payload, uint32_t len)
{
    /* The new payload goes to a fresh buffer, never freed: a reader may
     * still be copying the old one when the pointer moves (it then sees the
     * timestamp changed and retries), and no reader may ever copy freed or
     * reused memory as if it were a payload. */
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf)
        return -ENOMEM;
    if (len)
        memcpy(buf, payload, len);
    struct otelpub_header *h = otelpub_hdr;
    __atomic_store_n(&h->published_at_ns, 0, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_seq_cst);
    __atomic_store_n(&h->payload, (uint64_t)(uintptr_t)buf, __ATOMIC_RELAXED);
    __atomic_store_n(&h->payload_size, len, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_seq_cst);
    __atomic_store_n(&h->published_at_ns, otelpub_timestamp(), __ATOMIC_RELAXED);
    (void)otelpub_name(h, otelpub_map_len); /* the OTEP re-names unconditionally */
    return 0;
}

int otelpub_update(const void *payload, uint32_t len)
{
    if (!payload && len)
        return -EINVAL;
    pthread_mutex_lock(&otelpub_lock);
    int rc = otelpub_hdr ? otelpub_update_locked(payload, len) : -ENOENT;
    pthread_mutex_unlock(&otelpub_lock);
    return rc;
}

/* ---- thread context (OTEP 4947) ----------------------------------------- */

#define OTELPUB_RECORD_SIZE 256

/* The record, byte-packed as the OTEP lays it out: a 28-byte fixed part,
 * then attrs_size bytes of (key u8, length u8, value) entries. */
struct otel_thread_ctx_record {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t valid;
    uint8_t trace_flags;
    uint16_t attrs_size;
    uint8_t attrs[OTELPUB_RECORD_SIZE - 28];
} __attribute__((packed, aligned(16)));

_Static_assert(offsetof(struct otel_thread_ctx_record, valid) == 24, "valid at 24");
_Static_assert(offsetof(struct otel_thread_ctx_record, attrs_size) == 26, "attrs_size at 26");
_Static_assert(offsetof(struct otel_thread_ctx_record, attrs) == 28, "attrs at 28");
_Static_assert(sizeof(struct otel_thread_ctx_record) == OTELPUB_RECORD_SIZE, "one record");

/* What a reader looks up: the symbol the OTEP names, global and default
 * visibility so that it is in .dynsym and its references stay preemptible
 * (relocations against the symbol, in whichever model the build uses).
 * volatile: every store is made, in program order with the fences. */
OTELPUB_EXPORT __thread struct otel_thread_ctx_record *volatile otel_thread_ctx_v1;

/* The thread's two record buffers, allocated at its first attach and kept
 * for the thread's life (a reader may hold the address of either). A
 * pointer, not the buffers themselves, in TLS: the initial-exec build puts
 * all of the module's TLS in the static TLS surplus glibc keeps for
 * dlopen()ed libraries, a few hundred bytes shared by every such library. */
static __thread struct otel_thread_ctx_record *otelpub_records;
/* The buffer of the thread's last attach: the next one takes the other. */
static __thread unsigned otelpub_last;

/* Attaches a span to the calling thread: @trace16 and @span8 (16 and 8
 * bytes), trace flags "sampled", and if @key >= 0 one attribute @key =
 * @value (a string, cut at 255 bytes). Silently none if the thread's
 * buffers cannot be allocated. */
void otelpub_attach(const uint8_t *trace16, const uint8_t *span8, int key,
                    const char *value) OTELPUB_EXPORT;
/* Detaches: the thread has no span. */
void otelpub_detach(void) OTELPUB_EXPORT;
void *otelpub_slot_address(void) OTELPUB_EXPORT;
unsigned long otelpub_thread_pointer(void) OTELPUB_EXPORT;

void otelpub_attach(const uint8_t *trace16, const uint8_t *span8, int key, const char *value)
{
    if (!otelpub_records) {
        otelpub_records = calloc(2, sizeof(*otelpub_records));
        if (!otelpub_records)
            return; /* no context for this thread: a reader sees none */
    }
    /* The published record stays untouched while the other is built: a
     * reader that interrupts the thread sees the old one or the new one,
     * complete. Alternating also after a detach (which publishes neither)
     * leaves a reader that took the pointer of the last span just before
     * the detach a record that is still that span's, not one half rewritten. */
    otelpub_last ^= 1u;
    struct otel_thread_ctx_record *r = &otelpub_records[otelpub_last];
    r->valid = 0;
    memcpy(r->trace_id, trace16, sizeof(r->trace_id));
    memcpy(r->span_id, span8, sizeof(r->span_id));
    r->trace_flags = 0x01; /* sampled */
    uint16_t n = 0;
    if (key >= 0 && key <= 255 && value) {
        size_t vlen = strlen(value);
        if (vlen > 255)
            vlen = 255;
        if (vlen + 2 <= sizeof(r->attrs)) {
            r->attrs[0] = (uint8_t)key;
            r->attrs[1] = (uint8_t)vlen;
            memcpy(&r->attrs[2], value, vlen);
            n = (uint16_t)(vlen + 2);
        }
    }
    r->attrs_size = n;
    r->valid = 1;
    /* Signal-handler semantics (the OTEP's concurrency model): a reader
     * sees this thread stopped, so only the compiler may reorder; the record
     * must be complete before the pointer to it is stored. */
    atomic_signal_fence(memory_order_seq_cst);
    otel_thread_ctx_v1 = r;
    atomic_signal_fence(memory_order_seq_cst);
}

void otelpub_detach(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    otel_thread_ctx_v1 = NULL;
    atomic_signal_fence(memory_order_seq_cst);
}

/* For tests that read the variable themselves: its address in this thread
 * (static TLS lies just below the thread pointer; a dynamic block is
 * malloc()ed elsewhere). */
void *otelpub_slot_address(void)
{
    return (void *)&otel_thread_ctx_v1;
}

/* The thread pointer on x86-64 glibc, which is what pthread_self() returns
 * and CPython stores as the thread state's thread_id. */
unsigned long otelpub_thread_pointer(void)
{
    return (unsigned long)pthread_self();
}
