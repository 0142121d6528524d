/*
 * The armed program process of an exec-mode sandbox run (compiled programs, interpreters
 * other than the warm Python, compilers).
 *
 * A slot's init posix_spawns this small binary instead of forking its own Python heap:
 * spawning shares the parent's memory until the exec, and the later exec of the program
 * then leaves a tiny address space instead of a copy-on-write interpreter, which is most
 * of what an exec-mode run used to cost. It does exactly what the Python program process
 * does (zygote.py, _program), in the same order:
 *
 *   armed: join the run's cgroups, a new IPC namespace and session, drop to the sandbox
 *          user with no capabilities, no_new_privs, Landlock, seccomp; report "armed";
 *   run:   take the request straight from the supervisor, write the input files, take
 *          stdio and the caller's extra fds, set rlimits, report "running", close every
 *          channel to the trusted side and exec the program.
 *
 * argv: launch WORKDIR UID GID USERNS NCG RULESET_FD BPF_FD
 * fds:  3 request socket, 4 collect pipe (write end), 5 .. 5+NCG-1 cgroup.procs of the
 *       run's cgroups, RULESET_FD Landlock ruleset (or -1), BPF_FD seccomp program (or -1).
 *
 * The request's spec (fd R_SPEC) is a list of NUL-terminated tokens written by the
 * supervisor (sandbox/_launch.py): argc, argv..., envc, env..., file_bytes, open_files,
 * stack_bytes, cpu_s, nfiles, (path, size, mode) per file, collect payload. File contents
 * follow each other in fd R_FILES.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

enum { REQ = 3, COLLECT = 4, CG0 = 5, HIGH_FD = 1000, MAX_FDS = 32, MAX_SPEC = 64 << 20 };
enum { R_STDOUT, R_STDERR, R_FILES, R_STDIN, R_SPEC };

static int req = REQ;

static void say(const char *json) { send(req, json, strlen(json), MSG_NOSIGNAL); }

/* Report a setup failure to the supervisor (a sandbox error, never the program's) and die. */
static void fail(const char *what) {
    char buf[512];
    snprintf(buf, sizeof buf, "{\"kind\":\"error\",\"message\":\"launcher: %s: %s\"}", what,
             strerror(errno));
    say(buf);
    _exit(126);
}

static long num(const char *s, const char *what) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) {
        errno = EINVAL;
        fail(what);
    }
    return v;
}

static void close_from(int first) {
    if (syscall(SYS_close_range, first, ~0U, 0) != 0)
        for (int fd = first; fd < 65536; fd++) close(fd);
}

static char *read_all(int fd, size_t *len) {
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || st.st_size > MAX_SPEC) fail("spec size");
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) fail("spec alloc");
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (n <= 0) fail("spec read");
        got += (size_t)n;
    }
    buf[got] = 0;
    *len = got;
    return buf;
}

/* The spec's tokens, in order; running out of them is the supervisor's bug. */
struct tokens {
    char *p, *end;
};

static char *next(struct tokens *t) {
    if (t->p >= t->end) {
        errno = EPROTO;
        fail("spec truncated");
    }
    char *tok = t->p;
    char *nul = memchr(t->p, 0, (size_t)(t->end - t->p));
    if (!nul) {
        errno = EPROTO;
        fail("spec unterminated");
    }
    t->p = nul + 1;
    return tok;
}

/* Relative, no "..", no empty components: the supervisor checked; check again. */
static int safe_path(const char *p) {
    if (!*p || *p == '/') return 0;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
        s += n + (e ? 1 : 0);
    }
    return 1;
}

static void write_file(const char *path, long size, long mode, int src, off_t *offset) {
    if (!safe_path(path)) {
        errno = EINVAL;
        fail("file path");
    }
    char dir[4096];
    if (strlen(path) >= sizeof dir) {
        errno = ENAMETOOLONG;
        fail("file path");
    }
    strcpy(dir, path);
    for (char *s = strchr(dir, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) fail("mkdir");
        *s = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    if (fd < 0) fail("create input file");
    long left = size;
    while (left > 0) {
        ssize_t n = sendfile(fd, src, offset, (size_t)left);
        if (n <= 0) fail("write input file");
        left -= n;
    }
    if (fchmod(fd, (mode_t)(mode & 0777)) != 0) fail("chmod input file");
    close(fd);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        errno = EINVAL;
        fail("usage");
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL); /* the init's SIG_IGNs stay behind */

    const char *workdir = argv[1];
    uid_t uid = (uid_t)num(argv[2], "uid");
    gid_t gid = (gid_t)num(argv[3], "gid");
    int userns = (int)num(argv[4], "userns");
    int ncg = (int)num(argv[5], "cgroups");
    int ruleset = (int)num(argv[6], "ruleset");
    int bpf = (int)num(argv[7], "bpf");
    int top = CG0 + ncg - 1;
    if (ruleset > top) top = ruleset;
    if (bpf > top) top = bpf;
    close_from(top + 1);

    /* -- armed ------------------------------------------------------------------------ */
    for (int i = 0; i < ncg; i++) {
        if (write(CG0 + i, "0", 1) != 1) fail("join cgroup");
        close(CG0 + i);
    }
    if (unshare(CLONE_NEWIPC) != 0) fail("unshare ipc");
    if (setsid() < 0) fail("setsid");
    if (chdir(workdir) != 0) fail("chdir");
    if (!userns && setgroups(0, NULL) != 0) fail("setgroups");
    if (setresgid(gid, gid, gid) != 0) fail("setresgid");
    if (setresuid(uid, uid, uid) != 0) fail("setresuid");
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    memset(caps, 0, sizeof caps);
    if (syscall(SYS_capset, &hdr, caps) != 0) fail("capset");
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) fail("dumpable");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
    if (ruleset >= 0) {
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) fail("landlock");
        close(ruleset);
    }
    if (bpf >= 0) {
        size_t len;
        char *code = read_all(bpf, &len);
        close(bpf);
        if (len == 0 || len % sizeof(struct sock_filter) != 0) {
            errno = EINVAL;
            fail("seccomp program");
        }
        struct sock_fprog prog = {(unsigned short)(len / sizeof(struct sock_filter)),
                                  (struct sock_filter *)code};
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) fail("seccomp");
        free(code);
    }
    say("{\"kind\":\"armed\"}");

    /* -- run -------------------------------------------------------------------------- */
    static char msg[65536];
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(MAX_FDS * sizeof(int))];
    } ctl;
    struct iovec iov = {msg, sizeof msg};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    ssize_t got = recvmsg(req, &mh, MSG_CMSG_CLOEXEC);
    if (got <= 0) _exit(0); /* the supervisor is gone */
    int fds[MAX_FDS], nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n && nfds < MAX_FDS; i++)
            memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) || nfds < R_SPEC + 1) {
        errno = EPROTO;
        fail("request");
    }
    size_t speclen;
    char *spec = read_all(fds[R_SPEC], &speclen);
    struct tokens t = {spec, spec + speclen};
    int pargc = (int)num(next(&t), "argc");
    if (pargc < 1 || pargc > 4096) fail("argc");
    char **pargv = calloc((size_t)pargc + 1, sizeof(char *));
    for (int i = 0; i < pargc; i++) pargv[i] = next(&t);
    int envc = (int)num(next(&t), "envc");
    if (envc < 0 || envc > 4096) fail("envc");
    char **envp = calloc((size_t)envc + 1, sizeof(char *));
    for (int i = 0; i < envc; i++) envp[i] = next(&t);
    long file_bytes = num(next(&t), "file_bytes");
    long open_files = num(next(&t), "open_files");
    long stack_bytes = num(next(&t), "stack_bytes");
    long cpu_s = num(next(&t), "cpu_s");
    long nfiles = num(next(&t), "nfiles");
    off_t offset = 0;
    for (long i = 0; i < nfiles; i++) {
        char *path = next(&t);
        long size = num(next(&t), "file size");
        long mode = num(next(&t), "file mode");
        write_file(path, size, mode, fds[R_FILES], &offset);
    }
    char *collect = next(&t);
    size_t clen = strlen(collect);
    while (clen > 0) {
        ssize_t n = write(COLLECT, collect, clen);
        if (n <= 0) fail("collect");
        collect += n;
        clen -= (size_t)n;
    }
    close(COLLECT);

    /* stdin, stdout, stderr, then the caller's extra fds as 3, 4, ...: park every one high
       first, since the received fds sit at low numbers. */
    int order[MAX_FDS], nstdio = 0;
    order[nstdio++] = fds[R_STDIN];
    order[nstdio++] = fds[R_STDOUT];
    order[nstdio++] = fds[R_STDERR];
    for (int i = R_SPEC + 1; i < nfds; i++) order[nstdio++] = fds[i];
    int keep = fcntl(req, F_DUPFD_CLOEXEC, HIGH_FD);
    if (keep < 0) fail("park request socket");
    int parked[MAX_FDS];
    for (int i = 0; i < nstdio; i++)
        if ((parked[i] = fcntl(order[i], F_DUPFD_CLOEXEC, HIGH_FD)) < 0) fail("park fd");
    for (int i = 0; i < nfds; i++) close(fds[i]);
    req = keep;
    for (int i = 0; i < nstdio; i++)
        if (dup2(parked[i], i) != i) fail("dup2"); /* dup2 clears close-on-exec */
    if (syscall(SYS_close_range, nstdio, keep - 1, 0) != 0)
        for (int fd = nstdio; fd < keep; fd++) close(fd);
    close_from(keep + 1);

    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = 0;
    if (setrlimit(RLIMIT_CORE, &rl) != 0) fail("rlimit core");
    rl.rlim_cur = rl.rlim_max = (rlim_t)file_bytes;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) fail("rlimit fsize");
    rl.rlim_cur = rl.rlim_max = (rlim_t)open_files;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) fail("rlimit nofile");
    rl.rlim_cur = rl.rlim_max = (rlim_t)stack_bytes;
    if (setrlimit(RLIMIT_STACK, &rl) != 0) fail("rlimit stack");
    rl.rlim_cur = (rlim_t)cpu_s;
    rl.rlim_max = (rlim_t)cpu_s + 1;
    if (setrlimit(RLIMIT_CPU, &rl) != 0) fail("rlimit cpu");

    say("{\"kind\":\"running\"}");
    close(req);
    execve(pargv[0], pargv, envp);
    dprintf(2, "assay sandbox: cannot execute %s: %s\n", pargv[0], strerror(errno));
    _exit(127);
}
