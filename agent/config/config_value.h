/* SPDX-License-Identifier: MIT */
/*
 * config_value.h: the value types of the schema (config_schema.h) that need
 * more than a scan of their text, for the walker (config_walk.c) and
 * config_print(): CONFIG_T_URL, an http(s) URL libcurl's parser accepts,
 * whose password is a secret; CONFIG_T_FILE and CONFIG_T_SECRET_FILE, files
 * opened (or read as a secret) at load as they will be used. Internal to
 * agent/config/.
 *
 * Pure in the walker's sense: these report what is wrong and leave
 * reporting it (where, how) to the caller.
 *
 * Thread safety: the functions are thread-safe (libcurl's URL API and
 * base/readfile.h hold no state).
 */
#ifndef PYPROFD_CONFIG_CONFIG_VALUE_H
#define PYPROFD_CONFIG_CONFIG_VALUE_H

#include "base/compat.h"

/**
 * Checks URL @a u: the scheme (http or https) and the bytes (no spaces or
 * control characters) here, the rest with libcurl's URL parser, the one
 * that will use it, so that what it refuses is refused at load: a bad port,
 * a missing host ("http://${UNSET}:4040"). Returns 0 with *@a problem NULL
 * when it is fine, or what is wrong with it ("has no host"; possibly
 * written into @a buf), or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int config_value_url_check(const char *u, const char **problem, char *buf,
                                               size_t len);

/**
 * @a url for printing, with the password of its userinfo, if any, as
 * "<secret>" (as Prometheus prints http://bob:<secret>@host/). Returns 0
 * with *@a shown (caller frees with alloc_free()) or -ENOMEM. Never shows
 * the password.
 */
PYPROFD_WARN_UNUSED int config_value_url_shown(const char *url, char **shown);

/**
 * Checks the file @a path a FILE key (or, @a secret, a SECRET_FILE key)
 * names, as it will be used: a TLS file must open as a regular file (its
 * content is libcurl's to judge), a secret file must read as a secret
 * (readfile_secret(): no control character once the surrounding whitespace
 * is gone). Returns 0, or a negative errno with the whole message in
 * @a err ("cannot read '/p': ..."); -ENOMEM only when out of memory.
 */
PYPROFD_WARN_UNUSED int config_value_check_file(const char *path, bool secret, char *err,
                                                size_t errlen);

#endif /* PYPROFD_CONFIG_CONFIG_VALUE_H */
