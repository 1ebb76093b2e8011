/* SPDX-License-Identifier: MIT */
/*
 * version.h: which pyprofd this is, for `pyprofd --version` and the agent's
 * pyprofd_build_info metric. The definition is generated at build time by
 * cmake/PyprofdVersionInfo.cmake (the git revision, -dirty when the tree
 * had uncommitted changes, "unknown" when built outside git).
 *
 * Thread safety: immutable.
 */
#ifndef PYPROFD_CLI_VERSION_H
#define PYPROFD_CLI_VERSION_H

struct pyprofd_build {
    const char *version;    /* "0.1.0" */
    const char *revision;   /* "a1d8459c1f2e", "a1d8459c1f2e-dirty" or "unknown" */
    const char *date;       /* "2026-12-02T06:50:00Z", UTC */
    const char *compiler;   /* "GNU 12.2.0" */
    const char *build_type; /* "Release", "Debug", ... */
};

extern const struct pyprofd_build pyprofd_build;

#endif /* PYPROFD_CLI_VERSION_H */
