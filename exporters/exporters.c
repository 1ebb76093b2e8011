/* SPDX-License-Identifier: MIT */
/*
 * exporters.c: the exporter factory (see exporters.h).
 */
#include "base/compat.h"

#include "exporters/exporters.h"
#include "exporters/file/file_store.h"
#include "exporters/parca/parca.h"
#include "exporters/pyroscope/pyroscope.h"

int exporter_new_for(const struct config_remote_write *rw, struct exporter *out)
{
    int err = -EINVAL;
    switch (rw->type) {
    case CONFIG_PUSH_PYROSCOPE:
        err = pyroscope_exporter_new(rw, NULL, out);
        break;
    case CONFIG_PUSH_PARCA:
        err = parca_exporter_new(rw, NULL, out);
        break;
    }
    return err;
}

void exporters_free(struct exporter *ex, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ex[i].ops->free(ex[i].ctx);
}

int exporters_new(const struct pyprofd_config *cfg, struct exporter *ex, size_t max, size_t *n,
                  char *err, size_t errlen)
{
    int e = 0;
    size_t made = 0;
    bool storage = cfg->storage.directory != NULL;
    if (cfg->nremote_write > max || (storage && cfg->nremote_write + 1 > max)) {
        snprintf(err, errlen, "at most %zu remote_write endpoints",
                 storage && max > 0 ? max - 1 : max);
        e = -E2BIG;
        goto out;
    }
    if (storage) {
        e = file_store_new(cfg->storage.directory, cfg->storage.retention_ns,
                           cfg->storage.max_bytes, &ex[made]);
        if (e == -ELOOP)
            snprintf(err, errlen,
                     "storage: cannot use directory '%s': a symbolic link: refused (name the "
                     "directory it points to)",
                     cfg->storage.directory);
        else if (e)
            snprintf(err, errlen, "storage: %s", strerror(-e));
        if (e)
            goto out;
        made++;
    }
    for (size_t i = 0; i < cfg->nremote_write; i++) {
        const struct config_remote_write *rw = &cfg->remote_write[i];
        e = exporter_new_for(rw, &ex[made]);
        if (e) {
            snprintf(err, errlen, "remote_write '%s': cannot set it up: %s", rw->name,
                     strerror(-e));
            goto out;
        }
        made++;
    }
out:
    if (e) {
        exporters_free(ex, made);
        made = 0;
    }
    *n = made;
    return e;
}
