/* SPDX-License-Identifier: MIT */
/*
 * pprof_sample_writer.c: writes the fixed test window (pprof_test_fill())
 * encoded by pprof_build() to a file, so real consumers (go tool pprof) can
 * read what the encoder makes. Usage: pprof-sample-writer OUT.pb.gz
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "pprof_test.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: pprof-sample-writer OUT.pb.gz\n");
        return 2;
    }
    struct agg *a = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = 1;
    int err = agg_new(NULL, &a);
    if (!err)
        err = pprof_test_fill(a);
    if (!err) {
        struct pprof_meta m = pprof_test_meta();
        err = pprof_build(a, &m, &buf, &len);
    }
    if (err) {
        fprintf(stderr, "pprof-sample-writer: cannot build the profile: %s\n", strerror(-err));
        goto out;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        fprintf(stderr, "pprof-sample-writer: cannot open '%s': %s\n", argv[1], strerror(errno));
        goto out;
    }
    bool ok = fwrite(buf, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        fprintf(stderr, "pprof-sample-writer: cannot write '%s'\n", argv[1]);
        goto out;
    }
    rc = 0;
out:
    alloc_free(buf);
    agg_free(a);
    return rc;
}
