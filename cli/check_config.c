/* SPDX-License-Identifier: MIT */
/*
 * check_config.c: `pyprofd check-config [--config.expand-env] [--print]
 * FILE...`, the counterpart of `promtool check config`. Loads each file as
 * `pyprofd agent` would, prints every error (FILE:LINE:COLUMN: message, one per
 * line) on stderr, or "FILE: ok (N jobs, M remote_write endpoints)". With
 * --print the effective config of each valid file goes to stdout as YAML
 * (secrets shown as <secret>) and the "ok" lines go to stderr, so stdout
 * stays loadable YAML.
 *
 * Exit status: 0 all files valid, 1 some file invalid or unreadable, 2 usage.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/log.h"
#include "cli/cli.h"
#include "config/config.h"

static void check_config_usage(FILE *out)
{
    fputs("usage: pyprofd check-config [--config.expand-env] [--print] FILE...\n"
          "  --config.expand-env  expand ${VAR} and ${VAR:-default} in values\n"
          "  --print              print the effective config as YAML (secrets hidden)\n",
          out);
}

/* Checks one file; returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
static int check_config_one(const char *path, const struct config_load_opts *opts, bool print,
                            bool first)
{
    struct pyprofd_config *c = NULL;
    struct config_errors errs = {0};
    int status = CLI_EXIT_OK;
    char line[CONFIG_ERROR_MAX];
    int rc = config_load_file(path, opts, &c, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "%s\n", config_error_format(&errs, i, line, sizeof(line)));
    if (rc) {
        if (errs.n == 0)
            fprintf(stderr, "%s: %s\n", path, strerror(-rc));
        status = CLI_EXIT_FAIL;
        goto out;
    }
    fprintf(print ? stderr : stdout, "%s: ok (%zu job%s, %zu remote_write endpoint%s)\n", path,
            c->njobs, c->njobs == 1 ? "" : "s", c->nremote_write, c->nremote_write == 1 ? "" : "s");
    if (print) {
        printf("%s# %s\n", first ? "" : "---\n", path);
        if (config_print(c, stdout)) {
            log_error("cannot write the config of '%s': %s", path, strerror(EIO));
            status = CLI_EXIT_FAIL;
        }
    }
out:
    config_errors_release(&errs);
    config_free(c);
    return status;
}

int cli_check_config(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config.expand-env", no_argument, NULL, 'e'},
        {"print", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct config_load_opts lo = {0};
    bool print = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'e':
            lo.expand_env = true;
            break;
        case 'p':
            print = true;
            break;
        case 'h':
            check_config_usage(stdout);
            return CLI_EXIT_OK;
        default:
            check_config_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        log_error("check-config needs at least one file");
        check_config_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    int status = CLI_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        if (check_config_one(argv[i], &lo, print, i == optind) != CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
    }
    fflush(stdout);
    return status;
}
