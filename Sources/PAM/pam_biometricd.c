/*
 * pam_biometricd.so: authenticate the PAM user with biometricd (face or finger).
 *
 *   auth sufficient pam_biometricd.so [socket=PATH] [timeout=SECONDS] [factors=face,finger]
 *                                      [camera=ID] [daemon_user=NAME] [seat=SEAT]
 *                                      [other_users=deny|allow] [debug]
 *   auth optional   pam_biometricd.so after_password       (after the stack's password module)
 *
 * One connection, one auth.authenticate call, guidance lines shown through the application's
 * conversation (PAM_TEXT_INFO). It never stands in the way of the password: a daemon that is
 * missing, untrusted, silent, slow, or answers anything but a clean success gives
 * PAM_AUTHINFO_UNAVAIL (or PAM_AUTH_ERR after a real failed attempt), so a `sufficient` line
 * falls through to the next module. See Docs/pam.md.
 *
 * Whom it answers for (issue 33, item 7): the person at the camera's seat asking for their own
 * account (scope.c decides from the real uid, PAM_RUSER, PAM_RHOST, PAM_TTY and logind, never
 * from environment variables). A remote session, another user's attempt (su bob by alice; with
 * other_users=allow it runs but never counts toward bob's lockout) or a process outside a local,
 * active session on the seat gets PAM_IGNORE: the password.
 *
 * Recovery by password (issue 20): when this module's attempt did not succeed but the stack's
 * password module then did, the `after_password` line (pam-auth-update's Additional block, which
 * runs only after the primary block succeeded) asks the daemon to clear the user's biometric
 * lockout (auth.lockout.clear) — only when a password was typed in this stack (PAM_AUTHTOK set).
 * The daemon accepts that only from root, so only stacks run as root (login, su, sudo, display
 * managers) clear it, not a screen locker running as the user. setcred and account clear
 * nothing: an sshd that fails a password and then accepts a key calls them without any password
 * having been verified. It never changes the stack's result.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pam_biometricd.h"

#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <security/pam_appl.h>
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#define PAMB_EXPORT __attribute__((visibility("default")))

#define DEFAULT_SOCKET "/run/biometricd/biometricd.sock"
#define DEFAULT_TIMEOUT_S 10
#define FIRST_ANSWER_MS 2000 /* connect, send, and some event or the reply, all within this of the start */
#define GRACE_MS 5000        /* overall limit: timeout + this */
#define INFO_INTERVAL_MS 333 /* at most ~3 guidance messages a second */
#define REQUEST_ID 1
#define CLEAR_ID 2
/* pam_set_data key: what this module's authenticate did in this PAM handle. */
#define STATE_KEY "pam_biometricd_state"
enum { STATE_FAILED = 1, STATE_SUCCEEDED = 2, STATE_CLEARED = 3 };

struct cfg {
    const char *socket;
    long timeout_s;
    const char *factors;
    const char *camera;
    const char *daemon_user;
    const char *seat;
    int other_users_allowed;
    int after_password;
    int debug;
    int silent;
};

struct session {
    pam_handle_t *pamh;
    const struct cfg *cfg;
    char last_info[sizeof ((struct pamb_outcome *)0)->message];
    long last_info_ms;
};

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns 0, or -1 when the configuration is unusable (the module then steps aside). */
static int parse_args(pam_handle_t *pamh, int argc, const char **argv, struct cfg *c)
{
    memset(c, 0, sizeof *c);
    c->socket = DEFAULT_SOCKET;
    c->timeout_s = DEFAULT_TIMEOUT_S;
    c->seat = "seat0";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "debug") == 0) {
            c->debug = 1;
        } else if (strcmp(a, "after_password") == 0) {
            c->after_password = 1;
        } else if (strncmp(a, "seat=", 5) == 0) {
            c->seat = a + 5;
            if (!pamb_camera_valid(c->seat) || strlen(c->seat) > 64) {
                pam_syslog(pamh, LOG_ERR, "seat= must be a seat name such as seat0");
                return -1;
            }
        } else if (strncmp(a, "other_users=", 12) == 0) {
            if (strcmp(a + 12, "allow") == 0) c->other_users_allowed = 1;
            else if (strcmp(a + 12, "deny") == 0) c->other_users_allowed = 0;
            else {
                pam_syslog(pamh, LOG_ERR, "other_users= must be deny or allow");
                return -1;
            }
        } else if (strncmp(a, "socket=", 7) == 0) {
            c->socket = a + 7;
            if (c->socket[0] != '/' || strlen(c->socket) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
                pam_syslog(pamh, LOG_ERR, "socket= must be an absolute path shorter than 108 bytes");
                return -1;
            }
        } else if (strncmp(a, "timeout=", 8) == 0) {
            char *end;
            errno = 0;
            long t = strtol(a + 8, &end, 10);
            if (errno || end == a + 8 || *end || t < 1 || t > 300)
                pam_syslog(pamh, LOG_WARNING, "timeout= must be 1-300 seconds (the daemon's limit); using %d", DEFAULT_TIMEOUT_S);
            else
                c->timeout_s = t;
        } else if (strncmp(a, "factors=", 8) == 0) {
            c->factors = a + 8;
            if (!pamb_factors_valid(c->factors)) {
                pam_syslog(pamh, LOG_ERR, "factors= must be a comma list of face, finger");
                return -1;
            }
        } else if (strncmp(a, "camera=", 7) == 0) {
            c->camera = a + 7;
            if (!pamb_camera_valid(c->camera)) {
                pam_syslog(pamh, LOG_ERR, "camera= must be 1-%d printable ASCII characters", PAMB_MAX_CAMERA);
                return -1;
            }
        } else if (strncmp(a, "daemon_user=", 12) == 0) {
            c->daemon_user = a + 12;
        } else {
            pam_syslog(pamh, LOG_WARNING, "unknown option ignored: %.64s", a);
        }
    }
    return 0;
}

static int account_uid(const char *name, unsigned *uid)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (name == NULL || *name == '\0' || getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || res == NULL) return 0;
    *uid = (unsigned)pw.pw_uid;
    return 1;
}

/* Whom this attempt is for, from the kernel (the real uid), PAM's items and logind. The
 * strings in `f` point into PAM's items, `seat_buf` and the configuration. */
static enum pamb_scope attempt_scope(pam_handle_t *pamh, const struct cfg *c, const char *user,
                                     struct pamb_scope_facts *f, char *seat_buf, size_t seat_cap)
{
    const void *item = NULL;
    memset(f, 0, sizeof *f);
    f->ruid = (unsigned)getuid();
    f->target_known = account_uid(user, &f->target_uid);
    if (pam_get_item(pamh, PAM_RUSER, &item) == PAM_SUCCESS && item != NULL)
        f->ruser_known = account_uid((const char *)item, &f->ruser_uid);
    item = NULL;
    if (pam_get_item(pamh, PAM_RHOST, &item) == PAM_SUCCESS) f->rhost = (const char *)item;
    item = NULL;
    if (pam_get_item(pamh, PAM_TTY, &item) == PAM_SUCCESS) f->tty = (const char *)item;
    static const char *const vars[] = { "SSH_CONNECTION", "SSH_CLIENT" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = pam_getenv(pamh, vars[i]);
        if ((v && *v) || ((v = getenv(vars[i])) && *v)) f->env_ssh = 1;
    }
    f->seat = c->seat;
    f->other_users_allowed = c->other_users_allowed;
    f->logind = sd_booted() > 0 && access("/run/systemd/seats/", F_OK) == 0;
    if (f->logind) {
        char *session = NULL;
        if (sd_pid_get_session(0, &session) >= 0 && session != NULL) {
            char *host = NULL, *seat = NULL;
            uid_t owner = (uid_t)-1;
            f->has_session = 1;
            f->session_remote = sd_session_is_remote(session) > 0 ||
                                (sd_session_get_remote_host(session, &host) >= 0 && host != NULL && host[0] != '\0');
            f->session_active = sd_session_is_active(session) > 0;
            if (sd_session_get_seat(session, &seat) >= 0 && seat != NULL) {
                snprintf(seat_buf, seat_cap, "%s", seat);
                f->session_seat = seat_buf;
            }
            f->session_uid = sd_session_get_uid(session, &owner) >= 0 ? (unsigned)owner : (unsigned)-1;
            free(host);
            free(seat);
            free(session);
        }
    }
    return pamb_decide_scope(f);
}

struct trust { uid_t ok[2]; int n; };

static int trusted(const struct trust *t, uid_t u)
{
    for (int i = 0; i < t->n; i++)
        if (t->ok[i] == u) return 1;
    return 0;
}

/* The socket and its folder must belong to root (or the daemon_user), the socket must not be
 * writable by others, the folder not writable by others unless sticky. Returns 0, -1 when
 * untrusted (logged), -2 when the socket does not exist. */
static int check_path(pam_handle_t *pamh, const struct cfg *c, struct trust *t)
{
    struct stat st;
    t->ok[0] = 0;
    t->n = 1;
    /* The daemon's user: daemon_user=, or the stock install's "biometricd" when it exists. */
    const char *name = c->daemon_user && *c->daemon_user ? c->daemon_user : "biometricd";
    {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwnam_r(name, &pw, buf, sizeof buf, &res) == 0 && res != NULL) {
            t->ok[t->n++] = pw.pw_uid;
        } else if (c->daemon_user && *c->daemon_user) {
            pam_syslog(pamh, LOG_ERR, "daemon_user %.64s does not exist", c->daemon_user);
            return -1;
        }
    }
    if (lstat(c->socket, &st) < 0) {
        if (errno == ENOENT) return -2;
        pam_syslog(pamh, LOG_ERR, "cannot stat %s: %m", c->socket);
        return -1;
    }
    /* Any local user may connect (SocketMode=0666: access is decided per call from SO_PEERCRED),
     * so the socket's own mode says nothing; who owns it, and who may replace it, does. */
    if (!S_ISSOCK(st.st_mode) || !trusted(t, st.st_uid)) {
        pam_syslog(pamh, LOG_ERR, "untrusted socket %s (uid %u, mode %03o): not a socket, or not owned "
                   "by root or the daemon's user", c->socket,
                   (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
    snprintf(dir, sizeof dir, "%s", c->socket);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0'; else *slash = '\0';
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || !trusted(t, st.st_uid) ||
        ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))) {
        pam_syslog(pamh, LOG_ERR, "untrusted folder %s: not owned by root or daemon_user, "
                   "or writable by others", dir);
        return -1;
    }
    return 0;
}

/* Waits for `events` on fd until the absolute deadline. 1 ready, 0 timed out, -1 error,
 * -2 interrupted by a signal (Ctrl-C in sudo). */
static int wait_fd(int fd, short events, long deadline)
{
    struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
    long left = deadline - now_ms();
    if (left <= 0) return 0;
    int rc = poll(&p, 1, (int)left);
    if (rc < 0) return errno == EINTR ? -2 : -1;
    return rc > 0 ? 1 : 0;
}

/* Non-blocking connect by `deadline`, then SO_PEERCRED. Returns fd, or -1 (logged). */
static int connect_daemon(pam_handle_t *pamh, const struct cfg *c, const struct trust *t, long deadline)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", c->socket);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int err = errno, rc;
        socklen_t len = sizeof err;
        if (err != EINPROGRESS || (rc = wait_fd(fd, POLLOUT, deadline)) <= 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
            if (c->debug) pam_syslog(pamh, LOG_DEBUG, "cannot connect to %s", c->socket);
            close(fd);
            return -1;
        }
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !trusted(t, cred.uid)) {
        pam_syslog(pamh, LOG_ERR, "untrusted daemon on %s: peer uid %u", c->socket,
                   len == sizeof cred ? (unsigned)cred.uid : 0u);
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *buf, size_t len, long deadline)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) { buf += n; len -= (size_t)n; continue; }
        if (n < 0 && errno == EINTR) return -2;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        int rc = wait_fd(fd, POLLOUT, deadline);
        if (rc <= 0) return rc == -2 ? -2 : -1;
    }
    return 0;
}

/* Shows guidance when it changed, at most every INFO_INTERVAL_MS unless `force`. */
static void info(struct session *s, const char *text, int force)
{
    const void *conv = NULL;
    if (text[0] == '\0' || s->cfg->silent) return;
    if (pam_get_item(s->pamh, PAM_CONV, &conv) != PAM_SUCCESS || conv == NULL ||
        ((const struct pam_conv *)conv)->conv == NULL)
        return;
    long t = now_ms();
    if (!force && (strcmp(text, s->last_info) == 0 || t - s->last_info_ms < INFO_INTERVAL_MS)) return;
    snprintf(s->last_info, sizeof s->last_info, "%s", text);
    s->last_info_ms = t;
    pam_info(s->pamh, "%s", text);
}

enum { END_NONE, END_TIMEOUT, END_SILENT, END_EOF, END_OVERSIZE, END_INTERRUPTED, END_IO };
static const char *const end_names[] = { "", "timeout", "no_answer", "eof", "oversize_line",
                                         "interrupted", "io_error" };

/* Reads lines until a final verdict. Returns the verdict; *end says why when it is not one. */
static int converse(struct session *s, int fd, const char *user, long first, long deadline,
                    struct pamb_outcome *out, int *end)
{
    size_t cap = PAMB_MAX_LINE + 1, len = 0;
    char *buf = malloc(cap);
    int alive = 0, verdict = PAMB_UNAVAIL;
    *end = END_IO;
    if (buf == NULL) return PAMB_UNAVAIL;
    for (;;) {
        long until = alive || first > deadline ? deadline : first;
        int rc = wait_fd(fd, POLLIN, until);
        if (rc == 0) { *end = alive || until == deadline ? END_TIMEOUT : END_SILENT; break; }
        if (rc < 0) { *end = rc == -2 ? END_INTERRUPTED : END_IO; break; }
        ssize_t n = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
        if (n == 0) { *end = END_EOF; break; }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) continue;
            *end = errno == EINTR ? END_INTERRUPTED : END_IO;
            break;
        }
        len += (size_t)n;
        size_t start = 0;
        char *nl;
        while ((nl = memchr(buf + start, '\n', len - start)) != NULL) {
            size_t ll = (size_t)(nl - (buf + start));
            const char *line = buf + start;
            start += ll + 1;
            if (strspn(line, " \t\r") >= ll) continue; /* blank line */
            verdict = pamb_handle_reply(line, ll, REQUEST_ID, user, out);
            if (verdict != PAMB_CONTINUE) { *end = END_NONE; goto done; }
            if (out->is_event) alive = 1;
            info(s, out->message, 0);
        }
        memmove(buf, buf + start, len - start);
        len -= start;
        if (len >= cap) { *end = END_OVERSIZE; break; }
    }
    verdict = PAMB_UNAVAIL;
done:
    free(buf);
    return verdict;
}

static int authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv);

static void state_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
    (void)pamh; (void)error_status;
    free(data);
}

static void set_state(pam_handle_t *pamh, int state)
{
    int *p = malloc(sizeof *p);
    if (p == NULL) return;
    *p = state;
    if (pam_set_data(pamh, STATE_KEY, p, state_cleanup) != PAM_SUCCESS) free(p);
}

static void clear_after_password(pam_handle_t *pamh, const struct cfg *c);

PAMB_EXPORT int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct cfg c;
    if (parse_args(pamh, argc, argv, &c) == 0 && c.after_password) {
        /* The Additional block: reached only when the primary block succeeded. */
        clear_after_password(pamh, &c);
        return PAM_IGNORE;
    }
    int rc = authenticate(pamh, flags, argc, argv);
    set_state(pamh, rc == PAM_SUCCESS ? STATE_SUCCEEDED : STATE_FAILED);
    return rc;
}

/* The primary block succeeded although this module's attempt in this stack did not, and a
 * password was typed (PAM_AUTHTOK): the password module authenticated the user. Ask the daemon
 * to clear the user's biometric lockout, once, as root only (the daemon refuses anyone else),
 * within the module's 2 s for an answer. */
static void clear_after_password(pam_handle_t *pamh, const struct cfg *cfg)
{
    const void *data = NULL, *authtok = NULL;
    struct cfg c = *cfg;
    struct trust t;
    const char *user = NULL;
    char req[512], shown[4 * PAMB_MAX_USER + 1];
    if (pam_get_data(pamh, STATE_KEY, &data) != PAM_SUCCESS || data == NULL || *(const int *)data != STATE_FAILED) return;
    set_state(pamh, STATE_CLEARED);
    if (pam_get_item(pamh, PAM_AUTHTOK, &authtok) != PAM_SUCCESS || authtok == NULL || ((const char *)authtok)[0] == '\0') return;
    if (geteuid() != 0) return;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL || !pamb_user_valid(user)) return;
    if (check_path(pamh, &c, &t) < 0) return;
    int len = pamb_build_clear_request(req, sizeof req, CLEAR_ID, user);
    if (len < 0) return;
    long t0 = now_ms();
    int fd = connect_daemon(pamh, &c, &t, t0 + FIRST_ANSWER_MS);
    if (fd < 0) return;
    char reply[1024];
    size_t got = 0;
    if (send_all(fd, req, (size_t)len, t0 + FIRST_ANSWER_MS) == 0) {
        long deadline = t0 + FIRST_ANSWER_MS;
        while (got < sizeof reply - 1 && memchr(reply, '\n', got) == NULL && wait_fd(fd, POLLIN, deadline) > 0) {
            ssize_t n = recv(fd, reply + got, sizeof reply - 1 - got, MSG_DONTWAIT);
            if (n <= 0) break;
            got += (size_t)n;
        }
    }
    close(fd);
    reply[got] = '\0';
    int ok = strstr(reply, "\"result\":{\"ok\":true}") != NULL;
    pamb_log_escape(user, shown, sizeof shown);
    pam_syslog(pamh, ok ? LOG_NOTICE : LOG_INFO, "user=%s password login: biometric lockout %s", shown,
               ok ? "cleared" : "not cleared (daemon refused or unavailable)");
}

static int authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    struct cfg c;
    struct session s;
    struct trust t;
    struct pamb_outcome out;
    struct pamb_scope_facts facts;
    const char *user = NULL;
    char req[1024], seat[80], shown[4 * PAMB_MAX_USER + 1];
    long t0 = now_ms();

    if (parse_args(pamh, argc, argv, &c) < 0) return PAM_AUTHINFO_UNAVAIL;
    c.silent = (flags & PAM_SILENT) != 0;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL) return PAM_AUTHINFO_UNAVAIL;
    if (!pamb_user_valid(user)) {
        pam_syslog(pamh, LOG_NOTICE, "user name refused (empty, over %d bytes, not UTF-8 or control "
                   "characters)", PAMB_MAX_USER);
        return PAM_USER_UNKNOWN;
    }
    pamb_log_escape(user, shown, sizeof shown);
    enum pamb_scope scope = attempt_scope(pamh, &c, user, &facts, seat, sizeof seat);
    if (scope != PAMB_SCOPE_RUN && scope != PAMB_SCOPE_RUN_OTHER_USER) {
        pam_syslog(pamh, LOG_INFO, "user=%s outcome=skipped reason=%s ruid=%u", shown, pamb_scope_name(scope), facts.ruid);
        return PAM_IGNORE;
    }
    int rc = check_path(pamh, &c, &t);
    if (rc == -2) {
        if (c.debug) pam_syslog(pamh, LOG_DEBUG, "no daemon: %s does not exist", c.socket);
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (rc < 0) return PAM_AUTHINFO_UNAVAIL;
    int len = pamb_build_request_ex(req, sizeof req, REQUEST_ID, user, c.factors, c.camera, c.timeout_s * 1000,
                                    scope == PAMB_SCOPE_RUN_OTHER_USER);
    if (len < 0) return PAM_AUTHINFO_UNAVAIL;

    long deadline = t0 + c.timeout_s * 1000 + GRACE_MS;
    /* A hung daemon holds the stack at most FIRST_ANSWER_MS in all: connect, send, first line. */
    long cdl = t0 + FIRST_ANSWER_MS < deadline ? t0 + FIRST_ANSWER_MS : deadline;
    int fd = connect_daemon(pamh, &c, &t, cdl);
    if (fd < 0) return PAM_AUTHINFO_UNAVAIL;

    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.cfg = &c;
    s.last_info_ms = -INFO_INTERVAL_MS;
    int end = END_IO, verdict = PAMB_UNAVAIL;
    memset(&out, 0, sizeof out);
    rc = send_all(fd, req, (size_t)len, cdl);
    if (rc == 0) verdict = converse(&s, fd, user, cdl, deadline, &out, &end);
    else end = rc == -2 ? END_INTERRUPTED : END_IO;
    close(fd); /* closing the connection cancels the daemon's session */
    long took = now_ms() - t0;

    switch (verdict) {
    case PAMB_SUCCESS:
        pam_syslog(pamh, LOG_NOTICE, "user=%s outcome=success factor=%s duration_ms=%ld",
                   shown, out.factor, took);
        return PAM_SUCCESS;
    case PAMB_AUTH_ERR:
        pam_syslog(pamh, LOG_NOTICE, "user=%s outcome=failure factor=%s reason=%s duration_ms=%ld",
                   shown, out.factor[0] ? out.factor : "-", out.reason[0] ? out.reason : "-", took);
        info(&s, out.message, 1);
        return PAM_AUTH_ERR;
    default:
        if (end != END_NONE)
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=unavailable reason=%s duration_ms=%ld",
                       shown, end_names[end], took);
        else
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=unavailable factor=%s reason=%s code=%ld "
                       "duration_ms=%ld", shown, out.factor[0] ? out.factor : "-",
                       out.reason[0] ? out.reason : "-", out.code, took);
        if (c.debug && out.duration_ms >= 0)
            pam_syslog(pamh, LOG_DEBUG, "daemon duration_ms=%ld", out.duration_ms);
        info(&s, out.message, 1);
        return PAM_AUTHINFO_UNAVAIL;
    }
}

/* Neither clears the lockout: they are called after a stack succeeded by any means (sshd calls
 * them after a public key, with a failed password attempt still on the handle). */
PAMB_EXPORT int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_SUCCESS;
}

PAMB_EXPORT int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_IGNORE;
}

PAMB_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_IGNORE;
}

PAMB_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_IGNORE;
}

PAMB_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_IGNORE;
}
