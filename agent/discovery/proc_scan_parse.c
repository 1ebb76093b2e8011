/* SPDX-License-Identifier: MIT */
/*
 * proc_scan_parse.c: the pure parsers of the /proc files the scanner reads
 * (see proc_scan_parse.h): stat, status, cgroup (with the container id) and
 * the proc root's stat (btime). No I/O, no allocation, no state.
 */
#include "base/compat.h"

#include "discovery/proc_scan_parse.h"

/* Unsigned decimal in [s, s+n): digits only, no overflow. */
static int scan_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int proc_scan_parse_pid(const char *s, size_t n, pid_t *out)
{
    uint64_t v;
    if (scan_u64(s, n, &v) || v > INT32_MAX)
        return -EINVAL;
    *out = (pid_t)v;
    return 0;
}

/* A token of a stat line: an optionally negative decimal. */
static bool scan_is_num(const char *s, size_t n)
{
    uint64_t v;
    if (n > 0 && s[0] == '-') {
        s++;
        n--;
    }
    return scan_u64(s, n, &v) == 0;
}

int proc_scan_parse_stat(const char *text, size_t len, struct proc_stat *out)
{
    struct proc_stat st = {0};
    if (len > 0 && text[len - 1] == '\n')
        len--;
    const char *open = memchr(text, '(', len);
    const char *close = len ? memrchr(text, ')', len) : NULL;
    if (!open || !close || close < open || open == text || open[-1] != ' ')
        return -EINVAL;
    if (proc_scan_parse_pid(text, (size_t)(open - 1 - text), &st.pid))
        return -EINVAL;
    st.comm = open + 1;
    st.comm_len = (size_t)(close - open - 1);

    /* Fields after the comm, numbered as in proc(5): 3 is the state. */
    const char *p = close + 1;
    const char *end = text + len;
    int field = 3;
    while (p < end && field <= 28) {
        if (*p != ' ')
            return -EINVAL;
        p++;
        const char *tok = p;
        while (p < end && *p != ' ')
            p++;
        size_t n = (size_t)(p - tok);
        uint64_t v = 0;
        if (field == 3) {
            if (n != 1 || tok[0] < 'A' || tok[0] > 'z')
                return -EINVAL;
            st.state = tok[0];
        } else if (field == 4) {
            if (proc_scan_parse_pid(tok, n, &st.ppid))
                return -EINVAL;
        } else if (field == 9) {
            if (scan_u64(tok, n, &v) || v > UINT32_MAX)
                return -EINVAL;
            st.flags = (uint32_t)v;
        } else if (field == 22) {
            if (scan_u64(tok, n, &st.start_ticks))
                return -EINVAL;
        } else if (field == 28) {
            if (scan_u64(tok, n, &st.start_stack))
                return -EINVAL;
        } else if (!scan_is_num(tok, n)) {
            return -EINVAL;
        }
        field++;
    }
    if (field <= 22)
        return -EINVAL;
    *out = st;
    return 0;
}

/*
 * Steps through the lines of [*p, end): sets the next line (without its '\n';
 * the last one may lack it) and advances *p. Returns false at the end.
 */
static bool scan_next_line(const char **p, const char *end, const char **line, size_t *len)
{
    if (*p >= end)
        return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl ? nl : end;
    *line = *p;
    *len = (size_t)(stop - *p);
    *p = nl ? nl + 1 : end;
    return true;
}

static bool scan_has_prefix(const char *s, size_t n, const char *prefix, size_t *plen)
{
    size_t k = strlen(prefix);
    *plen = k;
    return n >= k && memcmp(s, prefix, k) == 0;
}

/* Whitespace-separated decimal values of a status line; keeps the first or last. */
static int scan_status_values(const char *s, size_t n, bool last, uint64_t *out)
{
    size_t i = 0, found = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t j = i;
        while (j < n && s[j] != ' ' && s[j] != '\t')
            j++;
        if (j > i) {
            uint64_t v;
            if (scan_u64(s + i, j - i, &v))
                return -EINVAL;
            if (found == 0 || last)
                *out = v;
            found++;
        }
        i = j;
    }
    return found ? 0 : -EINVAL;
}

int proc_scan_parse_status(const char *text, size_t len, struct proc_status *out)
{
    struct proc_status st = {0};
    bool has_uid = false;
    const char *line, *cur = text, *end = text + len;
    size_t n;
    while (scan_next_line(&cur, end, &line, &n)) {
        size_t k;
        uint64_t v;
        if (scan_has_prefix(line, n, "Uid:", &k)) {
            if (scan_status_values(line + k, n - k, false, &v) || v > UINT32_MAX)
                return -EINVAL;
            st.uid = (uint32_t)v;
            has_uid = true;
        } else if (scan_has_prefix(line, n, "PPid:", &k)) {
            if (scan_status_values(line + k, n - k, false, &v) || v > INT32_MAX)
                return -EINVAL;
            st.ppid = (pid_t)v;
            st.has_ppid = true;
        } else if (scan_has_prefix(line, n, "Tgid:", &k)) {
            if (scan_status_values(line + k, n - k, false, &v) || v > INT32_MAX)
                return -EINVAL;
            st.tgid = (pid_t)v;
        } else if (scan_has_prefix(line, n, "NSpid:", &k)) {
            if (scan_status_values(line + k, n - k, true, &v) || v > INT32_MAX)
                return -EINVAL;
            st.nspid = (pid_t)v;
        }
    }
    if (!has_uid)
        return -EINVAL;
    *out = st;
    return 0;
}

static bool scan_is_hex64(const char *s)
{
    for (size_t i = 0; i < PROC_SCAN_CONTAINER_ID_LEN; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return true;
}

static const struct {
    const char *prefix;
    const char *runtime;
} scan_id_prefixes[] = {
    {"", ""},           {"docker-", "docker"}, {"cri-containerd-", "containerd"},
    {"crio-", "cri-o"}, {"libpod-", "podman"}, {"nerdctl-", "containerd"},
};

/*
 * Whether component [s, s+n) is [prefix]<id>[.scope] or <slice>:<name>:<id>;
 * if so, the id's first byte and the runtime of its prefix. The second form
 * is a systemd driver's cgroupsPath ("slice:prefix:name") that a runtime on
 * the cgroupfs driver took as a directory name (a kubelet and containerd
 * configured with different cgroup drivers); <name> is a prefix without its
 * '-'.
 */
static bool scan_id_component(const char *s, size_t n, const char **id, const char **runtime)
{
    static const char scope[] = ".scope";
    const size_t slen = sizeof(scope) - 1;
    if (n >= slen && memcmp(s + n - slen, scope, slen) == 0)
        n -= slen;
    if (n < PROC_SCAN_CONTAINER_ID_LEN || !scan_is_hex64(s + n - PROC_SCAN_CONTAINER_ID_LEN))
        return false;
    size_t plen = n - PROC_SCAN_CONTAINER_ID_LEN;
    const char *pre = s;
    size_t cut = 0; /* the '-' a colon-form name lacks */
    if (plen >= 2 && s[plen - 1] == ':') {
        const char *colon = memrchr(s, ':', plen - 1);
        if (!colon)
            return false;
        pre = colon + 1;
        plen = (size_t)(s + plen - 1 - pre);
        cut = 1;
        if (plen == 0)
            return false;
    }
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(scan_id_prefixes); i++) {
        if (strlen(scan_id_prefixes[i].prefix) == plen + cut &&
            memcmp(pre, scan_id_prefixes[i].prefix, plen) == 0) {
            *id = s + n - PROC_SCAN_CONTAINER_ID_LEN;
            *runtime = scan_id_prefixes[i].runtime;
            return true;
        }
    }
    return false;
}

/* Whether [path, path+end) has a component that is exactly "docker". */
static bool scan_has_docker_component(const char *path, size_t end)
{
    for (size_t i = 0; i + 6 <= end; i++) {
        if ((i == 0 || path[i - 1] == '/') && memcmp(path + i, "docker", 6) == 0 &&
            (i + 6 == end || path[i + 6] == '/'))
            return true;
    }
    return false;
}

bool proc_scan_container_id(const char *path, size_t len, char *id, const char **runtime)
{
    size_t end = len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && path[start - 1] != '/')
            start--;
        const char *found = NULL, *rt = "";
        if (end > start && scan_id_component(path + start, end - start, &found, &rt)) {
            memcpy(id, found, PROC_SCAN_CONTAINER_ID_LEN);
            id[PROC_SCAN_CONTAINER_ID_LEN] = '\0';
            /* "/docker/<id>", "/docker/buildkit/<id>": no prefix, docker above */
            if (!*rt && scan_has_docker_component(path, start))
                rt = "docker";
            *runtime = rt;
            return true;
        }
        end = start > 0 ? start - 1 : 0;
    }
    return false;
}

/* Whether the comma-separated controller list [s, s+n) holds @name. */
static bool scan_has_controller(const char *s, size_t n, const char *name)
{
    size_t k = strlen(name);
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        if (j - i == k && memcmp(s + i, name, k) == 0)
            return true;
        i = j + 1;
    }
    return false;
}

int proc_scan_parse_cgroup(const char *text, size_t len, struct proc_cgroup *out)
{
    struct proc_cgroup cg = {.runtime = ""};
    const char *v2 = NULL, *systemd = NULL, *cpu = NULL, *first = NULL;
    size_t v2_len = 0, systemd_len = 0, cpu_len = 0, first_len = 0;
    bool has_v1 = false;

    if (memchr(text, '\0', len))
        return -EINVAL;
    const char *line, *cur = text, *end = text + len;
    size_t n;
    while (scan_next_line(&cur, end, &line, &n)) {
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        uint64_t hid;
        if (!c2 || scan_u64(line, (size_t)(c1 - line), &hid))
            continue;
        const char *ctl = c1 + 1;
        size_t ctl_len = (size_t)(c2 - ctl);
        const char *path = c2 + 1;
        size_t path_len = n - (size_t)(path - line);
        if (hid == 0 && ctl_len == 0) {
            if (!v2) {
                v2 = path;
                v2_len = path_len;
            }
            continue;
        }
        has_v1 = true;
        if (!first) {
            first = path;
            first_len = path_len;
        }
        if (!systemd && scan_has_controller(ctl, ctl_len, "name=systemd")) {
            systemd = path;
            systemd_len = path_len;
        }
        if (!cpu && scan_has_controller(ctl, ctl_len, "cpu")) {
            cpu = path;
            cpu_len = path_len;
        }
    }
    /*
     * On a hybrid host a v2 path without an id defers to the v1 lines: "/",
     * or a runtime on the cgroupfs driver that made v1 cgroups only and left
     * 0:: where its shim was ("/system.slice/containerd.service").
     */
    const char *rt = "";
    if (v2 && (!has_v1 || proc_scan_container_id(v2, v2_len, cg.container_id, &rt))) {
        cg.path = v2;
        cg.path_len = v2_len;
    } else if (systemd) {
        cg.path = systemd;
        cg.path_len = systemd_len;
    } else if (cpu) {
        cg.path = cpu;
        cg.path_len = cpu_len;
    } else if (first) {
        cg.path = first;
        cg.path_len = first_len;
    } else if (v2) {
        cg.path = v2;
        cg.path_len = v2_len;
    }

    if (cg.path && proc_scan_container_id(cg.path, cg.path_len, cg.container_id, &rt)) {
        cg.runtime = rt;
    } else {
        cur = text;
        while (scan_next_line(&cur, end, &line, &n)) {
            const char *c1 = memchr(line, ':', n);
            const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
            if (!c2)
                continue;
            const char *path = c2 + 1;
            if (proc_scan_container_id(path, n - (size_t)(path - line), cg.container_id, &rt)) {
                cg.runtime = rt;
                break;
            }
        }
    }
    *out = cg;
    return 0;
}

int proc_scan_parse_btime(const char *text, size_t len, int64_t *btime)
{
    const char *line, *cur = text, *end = text + len;
    size_t n;
    while (scan_next_line(&cur, end, &line, &n)) {
        size_t k;
        if (!scan_has_prefix(line, n, "btime ", &k))
            continue;
        uint64_t v;
        if (scan_u64(line + k, n - k, &v) || v > (uint64_t)PROC_SCAN_SECONDS_MAX)
            return -EINVAL;
        *btime = (int64_t)v;
        return 0;
    }
    return -ENOENT;
}
