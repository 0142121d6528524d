/*
 * The program process's trusted set-up, in C: arming and taking the run request.
 *
 * Built twice (sandbox/_launch.py): as a shared library that the fork server loads, so a
 * Python program process (a fork of the slot's init) does these steps in one call each
 * instead of running Python over copy-on-write pages; and as the exec-mode launcher, a small
 * executable that a slot's init posix_spawns for compiled programs, interpreters and
 * compilers (spawning shares the init's memory until the exec instead of copying its page
 * tables, and the launcher's own exec of the program leaves a tiny address space behind).
 *
 *   assay_arm:  join the run's cgroups, a new session (and a new IPC namespace when there is
 *               no seccomp filter to refuse IPC), drop to the sandbox user with no
 *               capabilities, no_new_privs, Landlock, seccomp;
 *   assay_take: take the request straight from the supervisor, write the input files, take
 *               stdio and the caller's extra fds, set rlimits, report "running" and close
 *               every channel to the trusted side.
 *
 * Both report their own failures to the supervisor on the request socket (a sandbox error,
 * never the program's) and return -1.
 *
 * The library also holds the slot's init's own per-run steps: assay_fork_program forks a
 * Python program process that arms itself and takes its request (the two steps above)
 * before it returns to Python, and assay_slot_run does what the init does while that
 * process lives and when it ends. Every page written while parent and child share them is
 * copied, and the same steps reached through Python wrote ~200 more of them per run.
 *
 * The request's spec (fd R_SPEC) is a list of NUL-terminated tokens written by the
 * supervisor (sandbox/_launch.py): mode, argc, argv..., envc, env..., file_bytes,
 * open_files, stack_bytes, cpu_s, nfiles, (path, size, mode) per file, collect payload.
 * File contents follow each other in fd R_FILES.
 *
 * Launcher argv: launch WORKDIR UID GID USERNS NCG RULESET_FD BPF_FD
 * Launcher fds:  3 request socket, 4 collect pipe (write end), 5 .. 5+NCG-1 cgroup.procs of
 *                the run's cgroups, RULESET_FD Landlock ruleset (or -1), BPF_FD a memfd with
 *                the seccomp program (or -1).
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
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

enum { HIGH_FD = 1000, MAX_FDS = 32, MAX_SPEC = 64 << 20, MAX_ARGS = 65536 };
enum { R_STDOUT, R_STDERR, R_FILES, R_STDIN, R_SPEC };

/* The socket failures are reported on; the request socket, wherever it currently is. */
static int report_fd = -1;

static void say(const char *json) { send(report_fd, json, strlen(json), MSG_NOSIGNAL); }

static int fail(const char *what) {
    char buf[512];
    snprintf(buf, sizeof buf, "{\"kind\":\"error\",\"message\":\"setup: %s: %s\"}", what,
             strerror(errno));
    say(buf);
    return -1;
}

#define CHECK(cond, what) \
    do {                  \
        if (!(cond)) return fail(what); \
    } while (0)

static void close_from(int first, int last) {
    if (syscall(SYS_close_range, first, last, 0) != 0)
        for (int fd = first; fd <= last && fd < 65536; fd++) close(fd);
}

/* -- arming ---------------------------------------------------------------------------- */

int assay_arm(const char *workdir, int uid, int gid, int userns, const int *cg, int ncg,
              int ruleset, const void *bpf, size_t bpf_len, int req) {
    report_fd = req;
    for (int i = 0; i < ncg; i++) {
        CHECK(write(cg[i], "0", 1) == 1, "join cgroup");
        close(cg[i]);
    }
    /* A cgroup namespace rooted at the run's cgroup: /proc/self/cgroup shows "/", not the
     * host's hierarchy and the supervisor's pid in its session name. */
    if (ncg) CHECK(unshare(CLONE_NEWCGROUP) == 0, "unshare cgroup");
    /* The seccomp filter refuses every System V IPC and POSIX message-queue syscall; only
     * without it does a run need an IPC namespace of its own. */
    if (!bpf) CHECK(unshare(CLONE_NEWIPC) == 0, "unshare ipc");
    CHECK(setsid() >= 0, "setsid");
    CHECK(chdir(workdir) == 0, "chdir");
    if (!userns) CHECK(setgroups(0, NULL) == 0, "setgroups");
    CHECK(setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) == 0, "setresgid");
    CHECK(setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) == 0, "setresuid");
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];
    memset(caps, 0, sizeof caps);
    CHECK(syscall(SYS_capset, &hdr, caps) == 0, "capset"); /* clears the ambient set too */
    CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0, "dumpable");
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
    if (ruleset >= 0) {
        CHECK(syscall(SYS_landlock_restrict_self, ruleset, 0) == 0, "landlock");
        close(ruleset);
    }
    if (bpf) {
        errno = EINVAL;
        CHECK(bpf_len && bpf_len % sizeof(struct sock_filter) == 0 &&
                  bpf_len / sizeof(struct sock_filter) <= 0xffff,
              "seccomp program");
        struct sock_fprog prog = {(unsigned short)(bpf_len / sizeof(struct sock_filter)),
                                  (struct sock_filter *)bpf};
        CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0, "seccomp");
    }
    return 0;
}

/* -- the request ----------------------------------------------------------------------- */

static char *read_all(int fd, size_t *len) {
    struct stat st;
    /* The raw system call, not glibc's fstat (a GLIBC_2.33 symbol): the library then also
     * loads into the older C library of a task image's fork server. */
    if (syscall(SYS_fstat, fd, &st) != 0) return NULL;
    if (st.st_size < 0 || st.st_size > MAX_SPEC) {
        errno = EFBIG;
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) return NULL;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (n <= 0) {
            if (n == 0) errno = EIO;
            free(buf);
            return NULL;
        }
        got += (size_t)n;
    }
    buf[got] = 0;
    *len = got;
    return buf;
}

/* The spec's tokens, in order. */
struct tokens {
    char *p, *end;
};

static char *next(struct tokens *t) {
    char *nul = t->p < t->end ? memchr(t->p, 0, (size_t)(t->end - t->p)) : NULL;
    if (!nul) {
        errno = EPROTO;
        return NULL;
    }
    char *tok = t->p;
    t->p = nul + 1;
    return tok;
}

static int number(struct tokens *t, long lo, long hi, long *out) {
    char *s = next(t), *end;
    if (!s) return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        errno = EPROTO;
        return -1;
    }
    *out = v;
    return 0;
}

/* Relative, no "..", no empty components: the supervisor checked; check again. */
static int safe_path(const char *p) {
    if (!*p || *p == '/' || strlen(p) >= 4096) return 0;
    for (const char *s = p; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 2 && s[0] == '.' && s[1] == '.')) return 0;
        s += n + (e ? 1 : 0);
    }
    return 1;
}

static int write_file(const char *path, long size, long mode, int src, off_t *offset) {
    errno = EINVAL;
    CHECK(safe_path(path), "input file path");
    char dir[4096];
    strcpy(dir, path);
    for (char *s = strchr(dir, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir");
        *s = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
    CHECK(fd >= 0, "create input file");
    long left = size;
    while (left > 0) {
        ssize_t n = sendfile(fd, src, offset, (size_t)left);
        if (n <= 0) {
            if (n == 0) errno = EIO;
            close(fd);
            return fail("write input file");
        }
        left -= n;
    }
    int ok = fchmod(fd, (mode_t)(mode & 0777));
    close(fd);
    CHECK(ok == 0, "chmod input file");
    return 0;
}

static int limit(int resource, long soft, long hard) {
    struct rlimit rl = {(rlim_t)soft, (rlim_t)hard};
    return setrlimit(resource, &rl);
}

/* The fds a received message carried (at most MAX_FDS, as its control buffer holds). */
static int received_fds(struct msghdr *mh, int *fds) {
    int nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n && nfds < MAX_FDS; i++)
            memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    return nfds;
}

/* recvmsg of one message on `sock` into `buf` (`len` bytes) with `flags`: what recvmsg
   returned, the fds it carried in `fds` (at most MAX_FDS) and their count in *nfds, and
   its msg_flags in *msg_flags (when not NULL). */
static ssize_t recv_fds(int sock, void *buf, size_t len, int flags, int *fds, int *nfds,
                        int *msg_flags) {
    union { /* aligned for the cmsghdr it holds */
        struct cmsghdr h;
        char b[CMSG_SPACE(MAX_FDS * sizeof(int))];
    } ctl;
    struct iovec iov = {buf, len};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    ssize_t got = recvmsg(sock, &mh, flags);
    *nfds = got < 0 ? 0 : received_fds(&mh, fds);
    if (msg_flags) *msg_flags = mh.msg_flags;
    return got;
}

/* Take the request on `req`: 0 when the program may start (stdio in place, "running"
   reported, every trusted channel closed; *spec_out holds the spec, malloc'd), 1 when the
   supervisor went away instead, -1 on failure (reported). */
int assay_take(int req, int collect_w, char **spec_out, size_t *len_out) {
    report_fd = req;
    static char msg[65536];
    int fds[MAX_FDS], nfds, msg_flags;
    ssize_t got = recv_fds(req, msg, sizeof msg, MSG_CMSG_CLOEXEC, fds, &nfds, &msg_flags);
    if (got <= 0) {
        for (int i = 0; i < nfds; i++) close(fds[i]);
        return 1; /* the supervisor is gone */
    }
    errno = EPROTO;
    CHECK(!(msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && nfds >= R_SPEC + 1, "request");
    size_t speclen;
    char *spec = read_all(fds[R_SPEC], &speclen);
    CHECK(spec, "read spec");
    struct tokens t = {spec, spec + speclen};
    long n, file_bytes, open_files, stack_bytes, cpu_s, nfiles;
    CHECK(next(&t), "spec mode");
    CHECK(number(&t, 1, MAX_ARGS, &n) == 0, "spec argc");
    for (long i = 0; i < n; i++) CHECK(next(&t), "spec argv");
    CHECK(number(&t, 0, MAX_ARGS, &n) == 0, "spec envc");
    for (long i = 0; i < n; i++) CHECK(next(&t), "spec env");
    CHECK(number(&t, 0, 1L << 62, &file_bytes) == 0, "spec file_bytes");
    CHECK(number(&t, 0, 1L << 20, &open_files) == 0, "spec open_files");
    CHECK(number(&t, 0, 1L << 62, &stack_bytes) == 0, "spec stack_bytes");
    CHECK(number(&t, 1, 1L << 31, &cpu_s) == 0, "spec cpu_s");
    CHECK(number(&t, 0, MAX_ARGS, &nfiles) == 0, "spec nfiles");
    off_t offset = 0;
    for (long i = 0; i < nfiles; i++) {
        long size, mode;
        char *path = next(&t);
        CHECK(path, "spec file path");
        CHECK(number(&t, 0, 1L << 40, &size) == 0, "spec file size");
        CHECK(number(&t, 0, 07777, &mode) == 0, "spec file mode");
        if (write_file(path, size, mode, fds[R_FILES], &offset) != 0) return -1;
    }
    char *collect = next(&t);
    CHECK(collect, "spec collect");
    for (size_t left = strlen(collect); left > 0;) {
        ssize_t w = write(collect_w, collect, left);
        CHECK(w > 0, "collect");
        collect += w;
        left -= (size_t)w;
    }
    close(collect_w);

    /* stdin, stdout, stderr, then the caller's extra fds as 3, 4, ...: park every one high
       first, since the received fds sit at low numbers. */
    int order[MAX_FDS], nstdio = 0;
    order[nstdio++] = fds[R_STDIN];
    order[nstdio++] = fds[R_STDOUT];
    order[nstdio++] = fds[R_STDERR];
    for (int i = R_SPEC + 1; i < nfds; i++) order[nstdio++] = fds[i];
    int keep = fcntl(req, F_DUPFD_CLOEXEC, HIGH_FD);
    CHECK(keep >= 0, "park the request socket");
    report_fd = keep;
    int parked[MAX_FDS];
    for (int i = 0; i < nstdio; i++)
        CHECK((parked[i] = fcntl(order[i], F_DUPFD_CLOEXEC, HIGH_FD)) >= 0, "park fd");
    for (int i = 0; i < nfds; i++) close(fds[i]);
    close(req);
    for (int i = 0; i < nstdio; i++)
        CHECK(dup2(parked[i], i) == i, "place fd"); /* dup2 clears close-on-exec */
    close_from(nstdio, keep - 1);
    close_from(keep + 1, ~0U >> 1);

    CHECK(limit(RLIMIT_CORE, 0, 0) == 0, "rlimit core");
    CHECK(limit(RLIMIT_FSIZE, file_bytes, file_bytes) == 0, "rlimit fsize");
    CHECK(limit(RLIMIT_NOFILE, open_files, open_files) == 0, "rlimit nofile");
    CHECK(limit(RLIMIT_STACK, stack_bytes, stack_bytes) == 0, "rlimit stack");
    CHECK(limit(RLIMIT_CPU, cpu_s, cpu_s + 1) == 0, "rlimit cpu");

    say("{\"kind\":\"running\"}");
    close(keep);
    report_fd = -1;
    *spec_out = spec;
    *len_out = speclen;
    return 0;
}

void assay_free(void *p) { free(p); }

#ifdef ASSAY_LIBRARY
/* -- the slot's init, after forking a program process (slot.py) ------------------------ */

/* Messages of slot.py and wire.py, byte for byte. */
static const char ARMED_MSG[] = "{\"kind\":\"armed\"}";
static const char KILL_MSG[] = "{\"op\":\"kill\"}";

static int send_fd(int sock, const char *msg, size_t len, int fd) {
    union { /* aligned for the cmsghdr it holds */
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = {(void *)msg, len};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control.b;
    mh.msg_controllen = sizeof control.b;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* Consume one message on `sock`, closing any fds it carried. */
static void drop_message(int sock) {
    char buf[64];
    int fds[MAX_FDS], n;
    recv_fds(sock, buf, sizeof buf, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, fds, &n, NULL);
    for (int i = 0; i < n; i++) close(fds[i]);
}

/* -- the slot's background work at idle priority ------------------------------------- */

/* After a run's exit record is sent, the init resets the slot and forks and arms the next
 * program process: work no caller waits for while the slot's next run is not asked for.
 * It runs as SCHED_IDLE, so a CPU doing only that counts as idle when a run's process
 * wakes (it is put there and preempts it at once) instead of queueing that process
 * behind it while the other CPU idles, and the background work fills the CPUs' idle
 * moments. At the hand-over the program process and the init go back to SCHED_OTHER:
 * a program never runs at idle priority, and the init reaps and reports at normal
 * priority. Only where a process can come back from SCHED_IDLE (CAP_SYS_NICE in the
 * host's user namespace, or RLIMIT_NICE): assay_background_idle tries the round trip in
 * a child first, so the init is never left at idle priority. */
static int background_idle, run_idle;

/* Whether the work after the coming runs is background work: the supervisor says so in
   each arm order, as it knows whether runs are waiting for slots (then it is not). */
int assay_run_idle(int on) {
    run_idle = on;
    return 0;
}

static int set_policy(pid_t pid, int policy) {
    struct sched_param none = {0};
    return sched_setscheduler(pid, policy, &none);
}

/* 1 when the slot's background work runs at idle priority from now on, 0 when it cannot
   (it never does then), -1 with errno set when the trial failed to run. */
int assay_background_idle(void) {
    background_idle = 0;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) _exit(set_policy(0, SCHED_IDLE) == 0 && set_policy(0, SCHED_OTHER) == 0 ? 0 : 1);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    background_idle = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    return background_idle;
}

/* Back to normal priority (a program process the init forks in Python inherits it): 0, or
   -1 with errno set. */
int assay_foreground(void) { return background_idle ? set_policy(0, SCHED_OTHER) : 0; }

/*
 * The init S's steps after it forked (or spawned) the run's program process `child`, as
 * slot.py's Python path does them:
 *
 *   hand-over (when *pidfd_io < 0): close the program's ends (request socket `req_prog`,
 *     the collect pipe's write end, the cgroup fds), open a pidfd on it (*pidfd_io), wait
 *     for the program's own "armed" on `req_sup` (or its death, or an order), bring both
 *     processes back to normal priority (see assay_background_idle), and send the
 *     supervisor "armed" with the request socket `req_sup` (then closed);
 *   wait: until the program process exits, reaping every other child as it exits (an init
 *     must: orphans are reparented to it) and killing every process of the namespace on a
 *     kill order; any other order returns 1, unread, for slot.py to handle before it calls
 *     again; the supervisor's hang-up kills everything and ends S;
 *   end: kill whatever the program left, reap it, and write the exit record into `record`.
 *     Returns 3 when the program asked for files to be collected (slot.py collects and
 *     sends the record); else sends the record, goes to idle priority (when
 *     assay_background_idle found it can come back), closes `collect_r`, gives the slot a
 *     fresh tmpfs and ruleset (assay_reset_slot), and returns 0.
 *
 * -1: the hand-over failed, -2: a later step (errno set; slot.py reports and exits).
 */
int assay_reset_slot(int drop);

int assay_slot_run(int status, int child, int *pidfd_io, int req_prog, int collect_w,
                   const int *cg, int ncg, int req_sup, int collect_r, char *record,
                   size_t record_cap) {
    if (*pidfd_io < 0) {
        close(req_prog);
        close(collect_w);
        for (int i = 0; i < ncg; i++) close(cg[i]);
        int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
        if (pidfd < 0) return -1;
        fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        *pidfd_io = pidfd;
        /* Hand over once the program process has said "armed" too (or died, or an order
           came): the supervisor then finds both messages at once, one wake-up, not two. */
        struct pollfd armed[3] = {{req_sup, POLLIN, 0}, {pidfd, POLLIN, 0}, {status, POLLIN, 0}};
        while (poll(armed, 3, -1) < 0 && errno == EINTR) {
        }
        /* The program process (armed, or gone: ESRCH) and this process at normal priority
           before the supervisor can send the request. */
        if (background_idle &&
            ((set_policy(child, SCHED_OTHER) != 0 && errno != ESRCH) || assay_foreground() != 0))
            return -1;
        int sent = send_fd(status, ARMED_MSG, sizeof ARMED_MSG - 1, req_sup);
        close(req_sup);
        if (sent != 0) return -1;
    }
    /* SIGCHLD through a signalfd, blocked only while this waits: no program inherits it. */
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &chld, &old) != 0) return -2;
    int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    int result = -2, wstatus = 0, have_usage = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (sfd < 0) goto out;
    struct pollfd pfd[3] = {{status, POLLIN, 0}, {*pidfd_io, POLLIN, 0}, {sfd, POLLIN, 0}};
    for (;;) {
        int done = 0;
        for (;;) {
            struct rusage r;
            pid_t pid = wait4(-1, &wstatus, WNOHANG, &r);
            if (pid < 0 && errno == EINTR) continue;
            if (pid < 0) { /* no child at all: as slot.py, a status of 0 and no usage */
                wstatus = 0;
                done = 1;
                break;
            }
            if (pid == 0) break;
            if (pid == child) {
                ru = r;
                have_usage = 1;
                done = 1;
                break;
            }
        }
        if (done) break;
        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR) continue;
            goto out;
        }
        if (pfd[2].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            }
        }
        if (pfd[0].revents) {
            char peek[sizeof KILL_MSG];
            ssize_t n = recv(status, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n <= 0) { /* the supervisor is gone: take everything down */
                kill(-1, SIGKILL);
                _exit(0);
            }
            if (n == (ssize_t)sizeof KILL_MSG - 1 && memcmp(peek, KILL_MSG, (size_t)n) == 0) {
                drop_message(status);
                kill(-1, SIGKILL);
                continue;
            }
            result = 1; /* an order for slot.py, left unread */
            goto out;
        }
    }
    close(sfd);
    sfd = -1;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(*pidfd_io);
    *pidfd_io = -1;
    kill(-1, SIGKILL); /* whatever the program left behind */
    int left = 0;
    for (;;) {
        pid_t pid = waitpid(-1, NULL, 0);
        if (pid > 0) {
            left++;
            continue;
        }
        if (errno == EINTR) continue;
        break;
    }
    double cpu = have_usage ? (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                                  ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6
                            : 0.0;
    long rss = have_usage ? ru.ru_maxrss * 1024L : 0L;
    char how[32];
    if (WIFSIGNALED(wstatus))
        snprintf(how, sizeof how, "\"signal\":%d", WTERMSIG(wstatus));
    else
        snprintf(how, sizeof how, "\"exit_code\":%d", WEXITSTATUS(wstatus));
    int len = snprintf(record, record_cap,
                       "{\"kind\":\"exit\",\"cpu_s\":%.6f,\"maxrss_bytes\":%ld,\"left\":%d,%s}",
                       cpu, rss, left, how);
    if (len < 0 || (size_t)len >= record_cap) {
        errno = EOVERFLOW;
        return -2;
    }
    int pending = 0;
    if (ioctl(collect_r, FIONREAD, &pending) != 0) return -2;
    if (pending > 0) return 3;
    if (send(status, record, (size_t)len, MSG_NOSIGNAL) != len) return -2;
    if (background_idle && run_idle) set_policy(0, SCHED_IDLE); /* background from here */
    close(collect_r);
    if (assay_reset_slot(1) != 0) return -2;
    return 0;
out:
    if (sfd >= 0) close(sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return result;
}

/* -- the slot's reset between runs (slot.py's Slot._reset) ---------------------------- */

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif

struct path_beneath {
    unsigned long long allowed_access;
    int parent_fd;
} __attribute__((packed));

/* What rootfs.drop_rw, rootfs.fresh_rw and landlock.create_ruleset do, with the policy
   (places, modes, options, the ruleset's plan) handed over from Python:

   when `drop`, detach the last run's tmpfs from each of the n targets (failures ignored);
   mount a tmpfs with `options` on `stage`, make each place names[i] in it with modes[i]
   (owned by uid:gid when owned[i]) and bind it over targets[i], then detach `stage`;
   create the Landlock ruleset with the attributes `attr` (attr_size bytes; 0: none) and a
   path-beneath rule per rule_paths[j]: rule_access[2j] for a directory, rule_access[2j+1]
   otherwise.

   Returns the ruleset's fd, -1 when there is none, or -(10 + stage) with errno set on a
   failure, stage 1 the mount, 2 a place, 3 a bind, 4 the stage's detach, 5 the ruleset,
   6 + j rule j. */
int assay_reset(int drop, const char *stage, const char *options, int n,
                const char *const *names, const char *const *targets, const int *modes,
                const int *owned, int uid, int gid, const void *attr, size_t attr_size,
                int nrules, const char *const *rule_paths,
                const unsigned long long *rule_access) {
    if (drop)
        for (int i = 0; i < n; i++) umount2(targets[i], MNT_DETACH);
    if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) return -11;
    int failed = 0;
    char path[256];
    for (int i = 0; i < n && !failed; i++) {
        if (snprintf(path, sizeof path, "%s/%s", stage, names[i]) >= (int)sizeof path) {
            errno = ENAMETOOLONG;
            failed = -12;
        } else if (mkdir(path, 0700) != 0 || chmod(path, (mode_t)modes[i]) != 0 ||
                   (owned[i] && chown(path, (uid_t)uid, (gid_t)gid) != 0)) {
            failed = -12;
        } else if (mount(path, targets[i], NULL, MS_BIND, NULL) != 0) {
            failed = -13;
        }
    }
    int saved = errno;
    if (umount2(stage, MNT_DETACH) != 0 && !failed) return -14;
    if (failed) {
        errno = saved;
        return failed;
    }
    if (!attr_size) return -1;
    int fd = (int)syscall(SYS_landlock_create_ruleset, attr, attr_size, 0);
    if (fd < 0) return -15;
    for (int j = 0; j < nrules; j++) {
        /* A directory opens with O_DIRECTORY; anything else then fails with ENOTDIR (no
           fstat: its glibc 2.33 symbol would keep the library from loading in an image
           with an older glibc). */
        int is_dir = 1;
        int pfd = open(rule_paths[j], O_PATH | O_CLOEXEC | O_DIRECTORY);
        if (pfd < 0 && errno == ENOTDIR) {
            is_dir = 0;
            pfd = open(rule_paths[j], O_PATH | O_CLOEXEC);
        }
        if (pfd < 0) {
            saved = errno;
            close(fd);
            errno = saved;
            return -16 - j;
        }
        struct path_beneath rule = {rule_access[2 * j + (is_dir ? 0 : 1)], pfd};
        long res = syscall(SYS_landlock_add_rule, fd, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0);
        saved = errno;
        close(pfd);
        if (res != 0) {
            close(fd);
            errno = saved;
            return -16 - j;
        }
    }
    return fd;
}

/* The slot's reset as the init does it after each run: assay_reset's arguments but `drop`,
   stored once per slot (assay_set_reset; the arrays stay Python's), and the ruleset of the
   slot's current tmpfs, at RULESET_FD or above, close-on-exec (assay_ruleset). */
static struct {
    const char *stage, *options;
    int n;
    const char *const *names, *const *targets;
    const int *modes, *owned;
    int uid, gid;
    const void *attr;
    size_t attr_size;
    int nrules;
    const char *const *rule_paths;
    const unsigned long long *rule_access;
} slot_reset;
static int slot_ruleset = -1;
enum { RULESET_FD = 200 };

void assay_set_reset(const char *stage, const char *options, int n, const char *const *names,
                     const char *const *targets, const int *modes, const int *owned, int uid,
                     int gid, const void *attr, size_t attr_size, int nrules,
                     const char *const *rule_paths, const unsigned long long *rule_access) {
    slot_reset.stage = stage;
    slot_reset.options = options;
    slot_reset.n = n;
    slot_reset.names = names;
    slot_reset.targets = targets;
    slot_reset.modes = modes;
    slot_reset.owned = owned;
    slot_reset.uid = uid;
    slot_reset.gid = gid;
    slot_reset.attr = attr;
    slot_reset.attr_size = attr_size;
    slot_reset.nrules = nrules;
    slot_reset.rule_paths = rule_paths;
    slot_reset.rule_access = rule_access;
}

int assay_ruleset(void) { return slot_ruleset; }

/* A fresh tmpfs and its ruleset for the slot (the last one dropped when `drop`): 0, or
   assay_reset's failure code with errno set. */
int assay_reset_slot(int drop) {
    int fd = assay_reset(drop, slot_reset.stage, slot_reset.options, slot_reset.n,
                         slot_reset.names, slot_reset.targets, slot_reset.modes, slot_reset.owned,
                         slot_reset.uid, slot_reset.gid, slot_reset.attr, slot_reset.attr_size,
                         slot_reset.nrules, slot_reset.rule_paths, slot_reset.rule_access);
    if (fd < -1) return fd;
    if (slot_ruleset >= 0) close(slot_ruleset);
    slot_ruleset = -1;
    if (fd >= 0) {
        /* Out of the way of the stdio and pipe fds the program process sets up. */
        slot_ruleset = fcntl(fd, F_DUPFD_CLOEXEC, RULESET_FD);
        int saved = errno;
        close(fd);
        if (slot_ruleset < 0) {
            errno = saved;
            return -15;
        }
    }
    return 0;
}

/* -- forking a Python program process (the slot's init, slot.py) ---------------------- */

/* The interpreter's own fork hooks (what os.fork calls around fork()), handed over by
   native.py as addresses from ctypes.pythonapi: this library links to no Python. */
static void (*py_before_fork)(void), (*py_after_fork_parent)(void), (*py_after_fork_child)(void);

void assay_set_fork_hooks(void *before, void *parent, void *child) {
    py_before_fork = (void (*)(void))before;
    py_after_fork_parent = (void (*)(void))parent;
    py_after_fork_child = (void (*)(void))child;
}

/* -- the pages a run writes, faulted in before it is there ----------------------------- */

/* A program process shares every page with its slot's init until it writes one, which the
   kernel then copies: ~280 faults of a Python print(1) once its request is there, each on
   the run's path. The slot's first run, the supervisor's own print(1) (its calibration:
   sandbox.py), reports the pages it made its own (assay_report_pages); each later program
   process of the slot faults them in before it says "armed" (prefault), as the slot's
   background work, and its run finds them its own already. (The code pages a run maps
   too: populating them all cost more than their ~50 faults.) */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { PREFAULT_MAX = 2048 }; /* ranges */
static unsigned long prefault_ranges[2 * PREFAULT_MAX]; /* (address, bytes) pairs */
static int prefault_n;

/* `ranges`: n (address, bytes) pairs (copied; -1 past PREFAULT_MAX). */
int assay_set_prefault(const unsigned long *ranges, int n) {
    if (n < 0 || n > PREFAULT_MAX) return -1;
    memcpy(prefault_ranges, ranges, 2 * (size_t)n * sizeof *ranges);
    prefault_n = n;
    return 0;
}

/* Failures are only lost time (a range the process does not map; EINVAL, before Linux
   5.14: the rest is not tried). MADV_POPULATE_WRITE only faults pages in: no byte changes. */
static void prefault(void) {
    for (int i = 0; i < prefault_n; i++)
        if (madvise((void *)prefault_ranges[2 * i], prefault_ranges[2 * i + 1],
                    MADV_POPULATE_WRITE) != 0 &&
            errno == EINVAL)
            return;
}

/* Bits of a /proc/<pid>/pagemap entry (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (1ULL << 63)
#define PM_FILE (1ULL << 61)
#define PM_EXCLUSIVE (1ULL << 56)

/* One line "address bytes" at *len of out (cap bytes); -1 when full. */
static int report_line(unsigned long addr, unsigned long bytes, char *out, size_t *len,
                       size_t cap, int *n) {
    if (*n >= PREFAULT_MAX) return -1;
    int w = snprintf(out + *len, cap - *len, "%lu %lu\n", addr, bytes);
    if (w < 0 || (size_t)w >= cap - *len) return -1;
    *len += (size_t)w;
    ++*n;
    return 0;
}

/* The runs of pages of [start, end) that are this process's own anonymous pages. */
static void report_mapping(int pagemap, unsigned long start, unsigned long end,
                           unsigned long long *entries, char *out, size_t *len, size_t cap,
                           int *n) {
    const unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
    unsigned long run = 0, run_len = 0;
    for (unsigned long at = start; at < end;) {
        size_t count = (end - at) / page;
        if (count > 512) count = 512;
        ssize_t got = pread(pagemap, entries, count * 8, (off_t)(at / page * 8));
        if (got <= 0) break;
        count = (size_t)got / 8;
        for (size_t i = 0; i < count; i++) {
            unsigned long long e = entries[i];
            int own = (e & PM_PRESENT) && (e & PM_EXCLUSIVE) && !(e & PM_FILE);
            unsigned long addr = at + i * page;
            if (own && run_len && run + run_len == addr) {
                run_len += page;
                continue;
            }
            if (run_len && report_line(run, run_len, out, len, cap, n) != 0) return;
            run_len = 0;
            if (own) {
                run = addr;
                run_len = page;
            }
        }
        at += count * page;
    }
    if (run_len) report_line(run, run_len, out, len, cap, n);
}

/* Write to fd, as lines "address bytes", the pages of this process's private writable
   mappings that are its own (present, mapped by it alone, not the file's): in a program
   process forked from its init, the pages its run wrote. Its working memory (a mapping of
   its own, which the kernel may merge with a neighbour) is left out. 0, or -1 with errno. */
int assay_report_pages(int fd) {
    const size_t maps_cap = 1 << 20, out_cap = 1 << 18, entries_bytes = 512 * 8;
    size_t size = maps_cap + out_cap + entries_bytes;
    char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return -1;
    char *maps = mem, *out = mem + maps_cap;
    unsigned long long *entries = (unsigned long long *)(mem + maps_cap + out_cap);
    int result = -1, saved = 0, n = 0;
    size_t used = 0, len = 0;
    int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (mfd < 0 || pagemap < 0) goto done;
    for (ssize_t got; used < maps_cap - 1 &&
                      (got = read(mfd, maps + used, maps_cap - 1 - used)) > 0;)
        used += (size_t)got;
    maps[used] = 0;
    for (char *line = maps; *line;) {
        char *eol = strchr(line, '\n');
        if (eol) *eol = 0;
        unsigned long start, end;
        char perms[8] = "", name[64] = "";
        int fields = sscanf(line, "%lx-%lx %7s %*s %*s %*s %63s", &start, &end, perms, name);
        int special = name[0] == '[' && strcmp(name, "[heap]") && strcmp(name, "[stack]");
        if (fields >= 3 && perms[1] == 'w' && perms[3] == 'p' && !special) {
            /* The working memory may have merged with a neighbouring anonymous mapping. */
            unsigned long lo = (unsigned long)mem, hi = lo + size;
            if (start < lo)
                report_mapping(pagemap, start, end < lo ? end : lo, entries, out, &len,
                               out_cap, &n);
            if (end > hi)
                report_mapping(pagemap, start > hi ? start : hi, end, entries, out, &len,
                               out_cap, &n);
        }
        if (!eol) break;
        line = eol + 1;
    }
    result = 0;
    for (size_t at = 0; at < len;) {
        ssize_t w = write(fd, out + at, len - at);
        if (w <= 0) {
            result = -1;
            break;
        }
        at += (size_t)w;
    }
done:
    saved = errno;
    if (mfd >= 0) close(mfd);
    if (pagemap >= 0) close(pagemap);
    munmap(mem, size);
    errno = saved;
    return result;
}

/* Fork the run's Python program process and, in it, arm and take the request before
   returning to Python: the child then has written only the pages these C steps touch,
   where the same steps reached through Python (the fork's return, two ctypes calls with
   their arguments) wrote ~150 more, each one copied. In the parent (the slot's init), go on
   at once with assay_slot_run: hand the process over and wait for it, so the init runs no
   Python while it shares its pages with the program process either. Called through
   ctypes.PYFUNCTYPE, so with the GIL held, as os.fork is; and like os.fork it returns twice.

   ints: status, req_sup, collect_r (the init's ends: closed in the child), uid, gid,
   userns, ruleset, req (the program's request socket), collect_w, ncg, then ncg cgroup fds.
   Parent: the child's pid, or -errno if the fork failed; run_result then holds
   assay_slot_run's result and errno (*pidfd_io and record as there). Child: 0 with the spec in
   spec_buf (*spec_len bytes; *spec_big instead, malloc'd, when it does not fit); it never
   returns on a failure (exit 126, reported to the supervisor) or when the supervisor went
   away (exit 0). */
int assay_fork_program(const int *ints, const char *workdir, const void *bpf, size_t bpf_len,
                       char *spec_buf, size_t spec_cap, size_t *spec_len, char **spec_big,
                       int *pidfd_io, char *record, size_t record_cap, int *run_result) {
    py_before_fork();
    pid_t pid = fork();
    int saved = errno;
    if (pid != 0) {
        py_after_fork_parent();
        if (pid < 0) return -saved;
        run_result[0] = assay_slot_run(ints[0], (int)pid, pidfd_io, ints[7], ints[8], ints + 10,
                                       ints[9], ints[1], ints[2], record, record_cap);
        run_result[1] = errno;
        return (int)pid;
    }
    py_after_fork_child();
    for (int i = 0; i < 3; i++) close(ints[i]);
    int uid = ints[3], gid = ints[4], userns = ints[5], ruleset = ints[6], req = ints[7];
    int collect_w = ints[8], ncg = ints[9];
    if (assay_arm(workdir, uid, gid, userns, ints + 10, ncg, ruleset, bpf, bpf_len, req) != 0)
        _exit(126);
    prefault();
    if (send(req, ARMED_MSG, sizeof ARMED_MSG - 1, MSG_NOSIGNAL) != (ssize_t)sizeof ARMED_MSG - 1)
        _exit(126);
    char *spec;
    size_t len;
    int r = assay_take(req, collect_w, &spec, &len);
    if (r == 1) _exit(0);
    if (r != 0) _exit(126);
    *spec_len = len;
    *spec_big = NULL;
    if (len <= spec_cap) {
        memcpy(spec_buf, spec, len);
        free(spec);
    } else {
        *spec_big = spec;
    }
    return 0;
}

/* -- the init's loop over plain arm orders ------------------------------------------- */

/* -err, once the `n` cgroup fds of an arm order that could not be served are closed. */
static int unserved(int err, const int *fds, int n) {
    for (int i = 0; i < n; i++) close(fds[i]);
    return -err;
}

/* slot.py's loop for a slot of Python program processes, in C for the common orders: for
   each arm order in `orders` (this slot's kind with idle priority not allowed, then
   allowed, byte for byte), what _arm_and_wait does before assay_fork_program (the idle
   flag, the PID counter reset, the request socket pair and the collect pipe), then
   assay_fork_program itself; the init goes on with the next order without coming back to
   Python, so it writes none of the pages it shares with the program process of the run.
   ints: status, uid, gid, userns, bpf length (the program in `bpf`), then at most
   `max_runs` orders are taken (*taken counts them). Returns
     0  in the program process, as assay_fork_program's child does;
     1  the next order is not one of these: left unread, for slot.py;
     2  an order of these with more cgroup fds than the C steps take: taken, its fds in
        `fds` (*nfds) and its idle flag in *idle_out, for slot.py's own steps;
     3  a run's wait came back other than with the run over (an order, files to collect,
        a failure: run_result as assay_fork_program leaves it), its program's pid in
        *pid_out and the collect pipe's read end in *collect_out;
     4  `max_runs` orders taken;
     <0 -errno: a step before the fork failed (slot.py reports it and exits). */
int assay_serve(const int *ints, const char *const *orders, int max_runs, int *taken,
                const char *workdir, const void *bpf, char *spec_buf, size_t spec_cap,
                size_t *spec_len, char **spec_big, int *pidfd_io, char *record,
                size_t record_cap, int *run_result, int *fds, int *nfds, int *idle_out,
                int *pid_out, int *collect_out) {
    int status = ints[0];
    size_t lens[2] = {strlen(orders[0]), strlen(orders[1])};
    *taken = 0;
    while (*taken < max_runs) {
        char buf[256];
        ssize_t n = recv(status, buf, sizeof buf, MSG_PEEK);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        int idle = -1;
        for (int k = 0; k < 2; k++)
            if ((size_t)n == lens[k] && memcmp(buf, orders[k], lens[k]) == 0) idle = k;
        if (idle < 0) return 1;
        int ncg;
        if (recv_fds(status, buf, sizeof buf, MSG_CMSG_CLOEXEC, fds, &ncg, NULL) < 0)
            return -errno;
        (*taken)++;
        if (ncg > 16) {
            *nfds = ncg;
            *idle_out = idle;
            return 2;
        }
        run_idle = idle;
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
        int pair[2], pipe_fds[2];
        if (fd < 0 || write(fd, "1", 1) != 1) {
            int saved = errno;
            if (fd >= 0) close(fd);
            return unserved(saved, fds, ncg);
        }
        close(fd);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
            return unserved(errno, fds, ncg);
        if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
            int saved = errno;
            close(pair[0]);
            close(pair[1]);
            return unserved(saved, fds, ncg);
        }
        /* assay_fork_program's ints: the init's ends (status, the supervisor's end of the
           request socket, the collect pipe's read end), the ids, the ruleset, the program's
           ends, then the cgroup fds. */
        int args[10 + 16];
        int values[10] = {status,    pair[0], pipe_fds[0], ints[1],   ints[2],
                          ints[3],   slot_ruleset, pair[1], pipe_fds[1], ncg};
        memcpy(args, values, sizeof values);
        memcpy(args + 10, fds, (size_t)ncg * sizeof(int));
        int pid = assay_fork_program(args, workdir, bpf, (size_t)ints[4], spec_buf, spec_cap,
                                     spec_len, spec_big, pidfd_io, record, record_cap,
                                     run_result);
        if (pid == 0) return 0;
        if (pid < 0) return pid;
        if (run_result[0] != 0) {
            *pid_out = pid;
            *collect_out = pipe_fds[0];
            return 3;
        }
    }
    return 4;
}

#endif

#ifndef ASSAY_LIBRARY
/* -- the exec-mode launcher ------------------------------------------------------------ */

enum { REQ = 3, COLLECT = 4, CG0 = 5 };

static long arg(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) _exit(125);
    return v;
}

int main(int argc, char **argv) {
    if (argc != 8) _exit(125);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL); /* the init's SIG_IGNs stay behind */
    int ncg = (int)arg(argv[5]), ruleset = (int)arg(argv[6]), bpf_fd = (int)arg(argv[7]);
    if (ncg < 0 || ncg > 16) _exit(125);
    int top = CG0 + ncg - 1;
    if (ruleset > top) top = ruleset;
    if (bpf_fd > top) top = bpf_fd;
    close_from(top + 1, ~0U >> 1);
    report_fd = REQ;

    char *bpf = NULL;
    size_t bpf_len = 0;
    if (bpf_fd >= 0) {
        if (!(bpf = read_all(bpf_fd, &bpf_len))) {
            fail("read seccomp program");
            _exit(126);
        }
        close(bpf_fd);
    }
    int cg[16];
    for (int i = 0; i < ncg; i++) cg[i] = CG0 + i;
    if (assay_arm(argv[1], (int)arg(argv[2]), (int)arg(argv[3]), (int)arg(argv[4]), cg, ncg,
                  ruleset, bpf, bpf_len, REQ) != 0)
        _exit(126);
    free(bpf);
    say("{\"kind\":\"armed\"}");

    char *spec;
    size_t len;
    int r = assay_take(REQ, COLLECT, &spec, &len);
    if (r == 1) _exit(0);
    if (r != 0) _exit(126);
    /* The spec's first tokens: mode, argc, argv..., envc, env... (validated by take). */
    struct tokens t = {spec, spec + len};
    next(&t);
    long n = strtol(next(&t), NULL, 10);
    char **pargv = calloc((size_t)n + 1, sizeof(char *));
    for (long i = 0; i < n; i++) pargv[i] = next(&t);
    long envc = strtol(next(&t), NULL, 10);
    char **envp = calloc((size_t)envc + 1, sizeof(char *));
    for (long i = 0; i < envc; i++) envp[i] = next(&t);
    if (!pargv || !envp) _exit(126);
    execve(pargv[0], pargv, envp);
    dprintf(2, "assay sandbox: cannot execute %s: %s\n", pargv[0], strerror(errno));
    _exit(127);
}
#endif
