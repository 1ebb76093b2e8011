/* SPDX-License-Identifier: MIT */
/*
 * url.c: URLs with their password hidden (see url.h).
 */
#include "base/compat.h"

#include <stdio.h>

#include "base/url.h"

size_t url_redact(const char *u, char *out, size_t outlen)
{
    const char *auth = strstr(u, "://");
    const char *colon = NULL, *at = NULL;
    if (auth) {
        auth += 3;
        const char *end = auth + strcspn(auth, "/?#");
        for (const char *p = auth; p < end; p++)
            if (*p == '@')
                at = p;
        colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    }
    int n = colon ? snprintf(out, outlen, "%.*s<secret>%s", (int)(colon + 1 - u), u, at)
                  : snprintf(out, outlen, "%s", u);
    return n > 0 ? (size_t)n : 0;
}
