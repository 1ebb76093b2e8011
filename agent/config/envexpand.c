/* SPDX-License-Identifier: MIT */
/*
 * envexpand.c: ${VAR} and ${VAR:-default} in config values (config.h),
 * applied to each scalar after YAML parsing, so an expansion can never change
 * the structure of the file. Only the braced forms expand, and only when the
 * braces hold a valid variable name ([A-Za-z_][A-Za-z0-9_]*): "$1", "${1}" and
 * "foo$" stay as written, which keeps relabeling templates and regexes intact.
 * "$$" is one literal "$". The default runs to the first "}" and is not itself
 * expanded.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "config/config.h"

static bool envexpand_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

static const char *envexpand_lookup(const char *name, const struct config_load_opts *opts)
{
    if (opts && opts->getenv_fn)
        return opts->getenv_fn(name, opts->getenv_ctx);
    return getenv(name);
}

int config_expand_env(const char *in, const struct config_load_opts *opts, char **out,
                      char **missing)
{
    struct buf b;
    char name[256];
    int rc = 0;
    const char *p = in;
    buf_init(&b, CONFIG_MAX_SCALAR);
    if (missing)
        *missing = NULL;
    while (rc == 0 && *p) {
        const char *dollar = strchr(p, '$');
        if (!dollar) {
            rc = buf_add(&b, p, strlen(p));
            break;
        }
        rc = buf_add(&b, p, (size_t)(dollar - p));
        if (rc)
            break;
        p = dollar;
        if (p[1] == '$') {
            rc = buf_add(&b, "$", 1);
            p += 2;
            continue;
        }
        if (p[1] != '{' || !envexpand_name_char(p[2], true)) {
            rc = buf_add(&b, "$", 1); /* not an expansion: keep as written */
            p++;
            continue;
        }
        const char *close = strchr(p + 2, '}');
        if (!close) {
            rc = -EINVAL;
            break;
        }
        const char *n = p + 2, *ne = n;
        while (envexpand_name_char(*ne, ne == n))
            ne++;
        bool has_default = ne[0] == ':' && ne[1] == '-';
        if ((ne != close && !has_default) || (size_t)(ne - n) >= sizeof(name)) {
            /* "${1}", "${a b}", "${x:=y}": not ours to interpret */
            rc = buf_add(&b, "$", 1);
            p++;
            continue;
        }
        memcpy(name, n, (size_t)(ne - n));
        name[ne - n] = '\0';
        const char *val = envexpand_lookup(name, opts);
        if (val && *val) {
            rc = buf_add(&b, val, strlen(val));
        } else if (has_default) {
            rc = buf_add(&b, ne + 2, (size_t)(close - (ne + 2)));
        } else if (!val && missing && !*missing) {
            *missing = alloc_strdup(name);
            if (!*missing)
                rc = -ENOMEM;
        }
        p = close + 1;
    }
    if (rc == 0) {
        *out = buf_take(&b, NULL);
        if (!*out)
            rc = -ENOMEM;
    }
    buf_release(&b);
    return rc;
}
