/* SPDX-License-Identifier: MIT */
/*
 * kube_decode.c: what decoding a pod list costs, pyprofd's streaming decoder
 * (agent/discovery/kube_stream.h over base/jsonscan.h) beside the tree that
 * json-c's tokener builds of the same body (what the client did before issue
 * 28). Run by bench/kube_decode.sh; results in docs/performance.md
 * ("Pod lists from a hostile API server").
 *
 *   kube_decode stream|jsonc FILE [REPEAT]
 *
 * Feeds FILE (a PodList body) in 16 KiB pieces, as libcurl hands a body
 * over, REPEAT times (default 3), and prints one line: the mode, the bytes,
 * the best time, MiB/s, the pods (stream) or the tree's top-level items
 * (jsonc), and the peak resident memory of the process (VmHWM, after the
 * file itself was read into memory: the file's size is in it for both).
 */
#include "base/compat.h"

#include <json-c/json_tokener.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "discovery/kube_stream.h"

#define PIECE (16u << 10)

static size_t pods;

static int count_pod(void *arg, const struct kube_pod *p)
{
    (void)arg;
    pods += p != NULL;
    return 0;
}

static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static int run_stream(const char *buf, size_t len)
{
    struct kube_stream *s = NULL;
    if (kube_stream_new(KUBE_STREAM_LIST, &s) != 0)
        return -1;
    pods = 0;
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0; off += PIECE)
        rc = kube_stream_list_feed(s, buf + off, len - off < PIECE ? len - off : PIECE, count_pod,
                                   NULL);
    struct kube_list_meta m;
    if (rc == 0)
        rc = kube_stream_list_finish(s, &m);
    kube_stream_free(s);
    return rc;
}

static int run_jsonc(const char *buf, size_t len)
{
    struct json_tokener *tok = json_tokener_new_ex(64);
    struct json_object *o = NULL;
    for (size_t off = 0; off < len && !o; off += PIECE)
        o = json_tokener_parse_ex(tok, buf + off, (int)(len - off < PIECE ? len - off : PIECE));
    pods = 0;
    struct json_object *items = NULL;
    if (o && json_object_object_get_ex(o, "items", &items))
        pods = json_object_array_length(items);
    int rc = o ? 0 : -1;
    json_object_put(o);
    json_tokener_free(tok);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "stream") != 0 && strcmp(argv[1], "jsonc") != 0)) {
        fprintf(stderr, "usage: kube_decode stream|jsonc FILE [REPEAT]\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
        fprintf(stderr, "kube_decode: cannot read '%s'\n", argv[2]);
        return 1;
    }
    long len = ftell(f);
    rewind(f);
    char *buf = alloc_malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "kube_decode: cannot read '%s'\n", argv[2]);
        return 1;
    }
    fclose(f);
    int repeat = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 3;
    bool stream = strcmp(argv[1], "stream") == 0;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < (repeat > 0 ? repeat : 1); i++) {
        uint64_t t0 = clock_mono_now();
        if ((stream ? run_stream(buf, (size_t)len) : run_jsonc(buf, (size_t)len)) != 0) {
            fprintf(stderr, "kube_decode: %s refused '%s'\n", argv[1], argv[2]);
            return 1;
        }
        uint64_t dt = clock_mono_now() - t0;
        best = dt < best ? dt : best;
    }
    printf("%s\t%ld bytes\t%.3f s\t%.0f MiB/s\t%zu %s\tVmHWM %ld KiB\n", argv[1], len,
           (double)best / 1e9, (double)len / 1048576.0 / ((double)best / 1e9), pods,
           stream ? "pods" : "items", vm_hwm_kib());
    alloc_free(buf);
    return 0;
}
