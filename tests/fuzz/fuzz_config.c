/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the config loader (agent/config/config.c, config_yaml.c),
 * ${VAR} expansion and relabeling (agent/config/relabel.c).
 *
 * The input is a YAML file, loaded with ${VAR} expansion on and a fixed fake
 * environment. When it loads: every job's relabel_configs and every endpoint's
 * write_relabel_configs run over a fixed set of meta labels plus one label
 * holding the input's first bytes, followed by the service_name default and
 * relabel_finish(); and the effective config printed by config_print() must
 * load again (without expansion) and print identically.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "config/config.h"
#include "config/relabel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *fuzz_getenv(const char *name, void *ctx)
{
    static const struct {
        const char *name, *value;
    } env[] = {
        {"A", "x"},       {"NODE_NAME", "worker-7"}, {"RATE", "250"}, {"NESTED", "${A}"},
        {"DOLLAR", "$1"}, {"BAD_UTF8", "\xff\xfe"},  {"EMPTY", ""},   {"QUOTE", "\"'\n: -"},
    };
    (void)ctx;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(env); i++)
        if (strcmp(name, env[i].name) == 0)
            return env[i].value;
    return NULL;
}

static void fuzz_relabel(const struct relabel_rules *r, const uint8_t *data, size_t size)
{
    struct labels ls;
    bool keep = false;
    labels_init(&ls);
    if (labels_set(&ls, "__meta_process_pid", "4242") ||
        labels_set(&ls, "__meta_process_exe", "/usr/bin/python3.13") ||
        labels_set(&ls, "__meta_process_commandline", "python3 -m app.main --port 80") ||
        labels_set(&ls, "__meta_kubernetes_pod_label_app", "cart") ||
        labels_set(&ls, "__container_id__", "0123456789abcdef") || labels_set(&ls, "job", "j") ||
        labels_setn(&ls, "__meta_input", (const char *)data, size < 64 ? size : 64))
        goto out;
    if (relabel_apply(r, &ls, &keep) == 0 && keep && relabel_default_service_name(&ls) == 0) {
        relabel_finish(&ls);
        for (size_t i = 0; i < ls.n; i++)
            PYPROFD_ASSERT(ls.v[i].name[0] != '_' || ls.v[i].name[1] != '_');
    }
out:
    labels_release(&ls);
}

/* Prints @c into @buf (NUL-terminated); false when it did not fit. */
static bool fuzz_print(const struct pyprofd_config *c, char *buf, size_t len)
{
    FILE *f = fmemopen(buf, len, "w");
    if (!f)
        return false;
    bool ok = config_print(c, f) == 0;
    long n = ftell(f);
    ok = fclose(f) == 0 && ok && n >= 0 && (size_t)n < len;
    if (ok)
        buf[n] = '\0';
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char first[1 << 20], second[1 << 20];
    struct config_load_opts opts = {.expand_env = true, .getenv_fn = fuzz_getenv};
    struct pyprofd_config *c = NULL, *again = NULL;
    struct config_errors errs = {0};
    int rc = config_load_buffer((const char *)data, size, "fuzz.yml", &opts, &c, &errs);
    PYPROFD_ASSERT((rc == 0) == (c != NULL));
    PYPROFD_ASSERT(rc != -EINVAL || errs.n > 0);
    config_errors_release(&errs);
    if (rc)
        return 0;
    for (size_t i = 0; i < c->njobs; i++)
        fuzz_relabel(c->jobs[i].relabel, data, size);
    for (size_t i = 0; i < c->nremote_write; i++)
        fuzz_relabel(c->remote_write[i].write_relabel, data, size);
    if (fuzz_print(c, first, sizeof(first))) {
        rc = config_load_buffer(first, strlen(first), "printed.yml", NULL, &again, &errs);
        if (rc == 0 && fuzz_print(again, second, sizeof(second)))
            PYPROFD_ASSERT(strcmp(first, second) == 0);
        else
            PYPROFD_ASSERT(rc == -ENOMEM || rc == 0);
        config_errors_release(&errs);
        config_free(again);
    }
    config_free(c);
    return 0;
}
