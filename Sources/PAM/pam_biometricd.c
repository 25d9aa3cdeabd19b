/*
 * pam_biometricd.so: authenticate the PAM user with biometricd (face or finger).
 *
 *   auth sufficient pam_biometricd.so [socket=PATH] [timeout=SECONDS] [factors=face,finger]
 *                                      [camera=ID] [daemon_user=NAME] [seat=SEAT]
 *                                      [other_users=deny|allow] [intent=none|enter|WORD]
 *                                      [password=parallel|after] [require_arrival=yes|no]
 *                                      [keyring=yes|no] [SERVICE:KEY=VALUE ...] [debug]
 *   auth optional   pam_biometricd.so after_password       (after the stack's password module)
 *   password optional pam_biometricd.so                    (re-seals the keyring secret)
 *
 * One connection, one auth.authenticate call, guidance lines shown through the application's
 * conversation (PAM_TEXT_INFO). It never stands in the way of the password: a daemon that is
 * missing, untrusted, silent, slow, or answers anything but a clean success gives
 * PAM_AUTHINFO_UNAVAIL (or PAM_AUTH_ERR after a real failed attempt), so a `sufficient` line
 * falls through to the next module. See Docs/pam.md.
 *
 * What it does in each service (issue 36; profile.c holds the table): elevation (sudo, su,
 * polkit-1) asks for an act of intent first — the password prompt comes first, and Enter on it
 * starts the camera; a password typed there goes to the stack as PAM_AUTHTOK. On a terminal the
 * module reads that prompt itself, and while the camera runs it keeps a password prompt open
 * (one thread, one poll() over the terminal and the daemon's socket): the first key typed closes
 * the daemon's connection (the camera stops), Enter hands the password on as PAM_AUTHTOK. A
 * lock screen whose face service starts at the lock asks the daemon for a face that arrives
 * after the attempt began. A root login process hands the user's TPM-sealed login password on
 * as PAM_AUTHTOK after a success, when the user set it up, for pam_gnome_keyring/pam_kwallet5.
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
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <termios.h>
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
#define FIRST_ANSWER_MS 2000 /* connect, send, and some event or the reply, all within this of the start */
#define GRACE_MS 5000        /* overall limit: timeout + this */
#define INFO_INTERVAL_MS 333 /* at most ~3 guidance messages a second */
#define TYPING_LIMIT_MS 300000 /* a password being typed at the module's own prompt: sudo's passwd_timeout */
#define KEYRING_MS 8000      /* systemd-creds decrypt (a TPM unseal) */
#define REQUEST_ID 1
#define CLEAR_ID 2
#define USER_GET_ID 3
/* pam_set_data key: what this module's authenticate did in this PAM handle. */
#define STATE_KEY "pam_biometricd_state"
enum { STATE_FAILED = 1, STATE_SUCCEEDED = 2, STATE_CLEARED = 3 };

struct cfg {
    const char *socket;
    const char *factors;
    const char *camera;
    const char *daemon_user;
    const char *seat;
    const char *service;
    struct pamb_behaviour b;
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

/* One option that is not a behaviour (those are profile.c's). Returns 0, or -1 when the
 * configuration is unusable (the module then steps aside). */
static int other_option(pam_handle_t *pamh, const char *a, struct cfg *c)
{
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
    } else if (strncmp(a, "socket=", 7) == 0) {
        c->socket = a + 7;
        if (c->socket[0] != '/' || strlen(c->socket) >= sizeof ((struct sockaddr_un *)0)->sun_path) {
            pam_syslog(pamh, LOG_ERR, "socket= must be an absolute path shorter than 108 bytes");
            return -1;
        }
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
    return 0;
}

/* The service's defaults (profile.c), then the options for every service, then those scoped to
 * this one ("sudo:intent=none"): a scoped option wins over a general one. */
static int parse_args(pam_handle_t *pamh, int argc, const char **argv, struct cfg *c)
{
    const void *item = NULL;
    memset(c, 0, sizeof *c);
    c->socket = DEFAULT_SOCKET;
    c->seat = "seat0";
    if (pam_get_item(pamh, PAM_SERVICE, &item) == PAM_SUCCESS && item != NULL) c->service = (const char *)item;
    pamb_service_defaults(c->service, &c->b);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < argc; i++) {
            const char *a = argv[i];
            int scoped = pamb_scoped_option(c->service, &a);
            if (scoped < 0 || scoped != pass) continue;
            int r = pamb_behaviour_option(&c->b, a);
            if (r > 0) continue;
            if (r < 0) {
                if (strncmp(a, "timeout=", 8) == 0) {
                    /* as before: a bad timeout is logged and the default kept */
                    pam_syslog(pamh, LOG_WARNING, "timeout= must be 1-300 seconds (the daemon's limit); using %ld",
                               c->b.timeout_s);
                    continue;
                }
                pam_syslog(pamh, LOG_ERR, "invalid option %.64s (intent=none|enter|WORD, password=parallel|after, "
                           "require_arrival=yes|no, keyring=yes|no, other_users=deny|allow)", a);
                return -1;
            }
            if (pass == 1) {
                pam_syslog(pamh, LOG_WARNING, "option %.64s cannot be scoped to a service: ignored", argv[i]);
                continue;
            }
            if (other_option(pamh, a, c) < 0) return -1;
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
    f->other_users_allowed = c->b.other_users_allowed;
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
        } else if (f->ruid == 0) {
            /* no session of its own: is the camera's seat showing a login screen? */
            char *active = NULL, *class = NULL;
            if (sd_seat_get_active(c->seat, &active, NULL) >= 0 && active != NULL &&
                sd_session_get_class(active, &class) >= 0 && class != NULL && strcmp(class, "greeter") == 0)
                f->seat_shows_greeter = 1;
            free(class);
            free(active);
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

static int has_conv(pam_handle_t *pamh)
{
    const void *conv = NULL;
    return pam_get_item(pamh, PAM_CONV, &conv) == PAM_SUCCESS && conv != NULL &&
           ((const struct pam_conv *)conv)->conv != NULL;
}

/* ---- the terminal: the module's own password prompt ------------------------------------------ */

/* The controlling terminal, when it is also standard input (a terminal program: login, su,
 * sudo): the module may then read the password itself while the camera runs. Anything else
 * (a pipe for sudo -S, a greeter, a polkit agent) goes through the application's conversation. */
struct term { int fd; struct termios saved; int raw; };

static int term_open(struct term *t)
{
    struct stat a, b;
    char path[128];
    t->fd = -1;
    t->raw = 0;
    /* standard input is a terminal, and it is this session's controlling terminal */
    if (!isatty(STDIN_FILENO) || fstat(STDIN_FILENO, &a) < 0 || !S_ISCHR(a.st_mode) ||
        tcgetsid(STDIN_FILENO) != getsid(0) || ttyname_r(STDIN_FILENO, path, sizeof path) != 0)
        return 0;
    int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return 0;
    if (fstat(fd, &b) < 0 || !S_ISCHR(b.st_mode) || a.st_rdev != b.st_rdev || tcgetattr(fd, &t->saved) < 0) {
        close(fd);
        return 0;
    }
    t->fd = fd;
    return 1;
}

/* No echo, no line discipline (the first key must be seen at once), signals kept (Ctrl-C). */
static int term_raw(struct term *t)
{
    struct termios r = t->saved;
    r.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON);
    r.c_cc[VMIN] = 1;
    r.c_cc[VTIME] = 0;
    if (tcsetattr(t->fd, TCSANOW, &r) < 0) return -1;
    t->raw = 1;
    return 0;
}

static void term_restore(struct term *t)
{
    if (t->fd >= 0 && t->raw) {
        tcsetattr(t->fd, TCSANOW, &t->saved);
        t->raw = 0;
    }
}

static void term_close(struct term *t)
{
    term_restore(t);
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
}

static void term_write(struct term *t, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(t->fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* What the person is asked for, in words: the prompt's stem and the modality. */
static void prompt_stem(const struct cfg *c, const char *user, char *buf, size_t cap)
{
    if (c->service && (strcmp(c->service, "sudo") == 0 || strcmp(c->service, "sudo-i") == 0))
        snprintf(buf, cap, "[sudo] password for %s", user); /* sudo's own default prompt */
    else
        snprintf(buf, cap, "Password");
}

static const char *modality(const struct cfg *c, const struct pamb_enrolment *e)
{
    int face = e ? e->face : (c->factors == NULL || strstr(c->factors, "face") != NULL);
    int finger = e ? e->finger : (c->factors != NULL && strstr(c->factors, "finger") != NULL);
    if (finger && !face) return "fingerprint";
    return "face";
}

enum term_read { TR_LINE, TR_EOF, TR_INTERRUPTED, TR_TIMEOUT, TR_ERROR };

/* Reads one line at the module's prompt (raw mode already on), until `deadline`. */
static enum term_read term_read_line(struct term *t, struct pamb_line *l, long deadline)
{
    for (;;) {
        int rc = wait_fd(t->fd, POLLIN, deadline);
        if (rc == 0) return TR_TIMEOUT;
        if (rc == -2) return TR_INTERRUPTED;
        if (rc < 0) return TR_ERROR;
        unsigned char chunk[64];
        ssize_t n = read(t->fd, chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR)) return TR_INTERRUPTED;
        if (n < 0 && errno == EAGAIN) continue;
        if (n <= 0) return TR_EOF; /* hang-up */
        for (ssize_t i = 0; i < n; i++) {
            if (pamb_line_feed(l, chunk[i]) == PAMB_LINE_DONE) {
                explicit_bzero(chunk, sizeof chunk);
                /* what followed Enter is not ours to read (or to leave for the shell: it may be
                 * the rest of a password typed too fast) */
                tcflush(t->fd, TCIFLUSH);
                return l->eof ? TR_EOF : TR_LINE;
            }
        }
        explicit_bzero(chunk, sizeof chunk);
    }
}

/* ---- the daemon's answer ------------------------------------------------------------------ */

/* Shows guidance when it changed, at most every INFO_INTERVAL_MS unless `force`: through the
 * application's conversation, or on the terminal above the module's own prompt. */
static void info(struct session *s, struct term *t, const char *prompt, const char *text, int force)
{
    if (text[0] == '\0' || s->cfg->silent) return;
    long now = now_ms();
    if (!force && (strcmp(text, s->last_info) == 0 || now - s->last_info_ms < INFO_INTERVAL_MS)) return;
    snprintf(s->last_info, sizeof s->last_info, "%s", text);
    s->last_info_ms = now;
    if (t != NULL && t->fd >= 0) {
        /* nothing has been typed yet (typing stops the camera): the prompt line is redrawn */
        term_write(t, "\r\033[K");
        term_write(t, text);
        term_write(t, "\r\n");
        if (prompt) term_write(t, prompt);
        return;
    }
    if (!has_conv(s->pamh)) return;
    pam_info(s->pamh, "%s", text);
}

enum { END_NONE, END_TIMEOUT, END_SILENT, END_EOF, END_OVERSIZE, END_INTERRUPTED, END_IO, END_TYPED, END_TTY };
static const char *const end_names[] = { "", "timeout", "no_answer", "eof", "oversize_line", "interrupted",
                                         "io_error", "password_typed", "terminal_closed" };

/* Reads the daemon's lines until a final verdict; on a terminal (`t`, raw, with `prompt` shown)
 * also the keys typed at the module's own password prompt, in the same poll(): the first key
 * closes the connection to the daemon (which cancels the camera) and the rest of the line is the
 * password (`line`). Returns the verdict; *end says why when it is not one (END_TYPED: `line`
 * holds the password, END_TTY: end of file at the prompt). */
static int converse(struct session *s, int fd, const char *user, long first, long deadline, struct pamb_outcome *out,
                    int *end, struct term *t, const char *prompt, struct pamb_line *line)
{
    size_t cap = PAMB_MAX_LINE + 1, len = 0;
    char *buf = malloc(cap);
    int alive = 0, verdict = PAMB_UNAVAIL;
    *end = END_IO;
    if (buf == NULL) return PAMB_UNAVAIL;
    for (;;) {
        long until = alive || first > deadline ? deadline : first;
        struct pollfd p[2] = { { fd, POLLIN, 0 }, { t ? t->fd : -1, POLLIN, 0 } };
        long left = until - now_ms();
        if (left <= 0) { *end = alive || until == deadline ? END_TIMEOUT : END_SILENT; break; }
        int rc = poll(p, t ? 2 : 1, (int)left);
        if (rc < 0) { *end = errno == EINTR ? END_INTERRUPTED : END_IO; break; }
        if (rc == 0) continue;
        /* The keyboard first: a person who started typing chose the password. */
        if (t && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            unsigned char c;
            ssize_t n = read(t->fd, &c, 1);
            if (n < 0 && errno == EINTR) { *end = END_INTERRUPTED; break; }
            if (n <= 0) { *end = END_TTY; break; }
            if (pamb_line_feed(line, c) == PAMB_LINE_DONE) {
                if (!line->eof && line->len == 0) {
                    /* Enter alone: nothing chosen; the camera goes on */
                    pamb_line_init(line, line->erase, line->kill, line->eof_char);
                    continue;
                }
                *end = line->eof ? END_TTY : END_TYPED;
                if (!line->eof) tcflush(t->fd, TCIFLUSH);
                break;
            }
            if (line->touched) {
                /* the camera stops now: the rest is the password, read without the daemon */
                *end = END_TYPED;
                break;
            }
            continue;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
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
            const char *ln = buf + start;
            start += ll + 1;
            if (strspn(ln, " \t\r") >= ll) continue; /* blank line */
            verdict = pamb_handle_reply(ln, ll, REQUEST_ID, user, out);
            if (verdict != PAMB_CONTINUE) { *end = END_NONE; goto done; }
            if (out->is_event) alive = 1;
            info(s, t, prompt, out->message, 0);
        }
        memmove(buf + 0, buf + start, len - start);
        len -= start;
        if (len >= cap) { *end = END_OVERSIZE; break; }
    }
    verdict = PAMB_UNAVAIL;
done:
    free(buf);
    return verdict;
}

/* user.get on the open connection: what the user has that this attempt could use. 1 something
 * to use, 0 nothing (not enrolled, no biometric factor in the policy, refused), -1 no answer. */
static int ask_enrolment(int fd, const char *user, long deadline, struct pamb_enrolment *e)
{
    char req[512], buf[8192];
    size_t len = 0;
    int n = pamb_build_user_get(req, sizeof req, USER_GET_ID, user);
    if (n < 0 || send_all(fd, req, (size_t)n, deadline) != 0) return -1;
    for (;;) {
        char *nl;
        while ((nl = memchr(buf, '\n', len)) != NULL) {
            size_t ll = (size_t)(nl - buf);
            int r = pamb_parse_user_get(buf, ll, USER_GET_ID, user, e);
            memmove(buf, nl + 1, len - ll - 1);
            len -= ll + 1;
            if (r == 2) continue;
            if (r < 0) return -1;
            return r == 1 && (e->face || e->finger) ? 1 : 0;
        }
        if (len >= sizeof buf) return -1;
        if (wait_fd(fd, POLLIN, deadline) <= 0) return -1;
        ssize_t got = recv(fd, buf + len, sizeof buf - len, MSG_DONTWAIT);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (got <= 0) return -1;
        len += (size_t)got;
    }
}

enum intent_answer { INTENT_GO, INTENT_PASSWORD, INTENT_DECLINED, INTENT_CONV_ERROR, INTENT_INTERRUPTED };

/* The act of intent: the password prompt, on which Enter (or the configured word) starts the
 * camera; anything else typed there is the password. On a terminal the module reads it itself;
 * elsewhere through the application's conversation (a polkit agent's field, SDDM's or swaylock's
 * typed password). The password, when typed, is in `password` (the caller wipes it). */
static enum intent_answer ask_intent(pam_handle_t *pamh, const struct cfg *c, const char *user, struct term *t,
                                     const struct pamb_enrolment *e, char *password, size_t pcap)
{
    char stem[200], prompt[400];
    const char *what = modality(c, e);
    prompt_stem(c, user, stem, sizeof stem);
    if (c->b.intent == PAMB_INTENT_WORD)
        snprintf(prompt, sizeof prompt, "%s (or type '%s' to use your %s): ", stem, c->b.intent_word, what);
    else
        snprintf(prompt, sizeof prompt, "%s (or press Enter to use your %s): ", stem, what);
    const char *typed = NULL;
    char *resp = NULL;
    struct pamb_line line;
    enum intent_answer answer = INTENT_CONV_ERROR;
    password[0] = '\0';
    if (t != NULL && t->fd >= 0) {
        pamb_line_init(&line, t->saved.c_cc[VERASE], t->saved.c_cc[VKILL], t->saved.c_cc[VEOF]);
        if (term_raw(t) < 0) return INTENT_CONV_ERROR;
        term_write(t, prompt);
        enum term_read r = term_read_line(t, &line, now_ms() + TYPING_LIMIT_MS);
        term_restore(t);
        term_write(t, "\r\n");
        if (r == TR_INTERRUPTED) answer = INTENT_INTERRUPTED;
        else if (r == TR_LINE) typed = pamb_line_text(&line);
        if (typed == NULL) {
            explicit_bzero(&line, sizeof line);
            return answer;
        }
    } else {
        if (pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &resp, "%s", prompt) != PAM_SUCCESS) {
            if (resp) { explicit_bzero(resp, strlen(resp)); free(resp); }
            return INTENT_CONV_ERROR;
        }
        typed = resp ? resp : "";
    }
    if (c->b.intent == PAMB_INTENT_WORD ? strcmp(typed, c->b.intent_word) == 0 : typed[0] == '\0') {
        answer = INTENT_GO;
    } else if (typed[0] == '\0') {
        answer = INTENT_DECLINED; /* a word was asked for and only Enter came */
    } else if (strlen(typed) < pcap) {
        memcpy(password, typed, strlen(typed) + 1);
        answer = INTENT_PASSWORD;
    }
    if (resp) { explicit_bzero(resp, strlen(resp)); free(resp); }
    explicit_bzero(&line, sizeof line);
    return answer;
}

/* The password typed at one of the module's prompts becomes PAM_AUTHTOK, for the stack's
 * password module (pam_unix reads it with pam_get_authtok, as with try_first_pass). Never logged,
 * never sent to the daemon. */
static void hand_on_password(pam_handle_t *pamh, const char *shown, const char *password, const char *where)
{
    if (pam_set_item(pamh, PAM_AUTHTOK, password) == PAM_SUCCESS)
        pam_syslog(pamh, LOG_INFO, "user=%s outcome=password reason=typed_at_%s", shown, where);
}

/* ---- the keyring ------------------------------------------------------------------------- */

/* After a success in a root login process: the user's sealed login password (authctl keyring
 * enable) becomes PAM_AUTHTOK, so pam_gnome_keyring / pam_kwallet5 later in the stack open the
 * login keyring as after a password login. A password changed since it was sealed makes it
 * stale: it is removed, and the user told. */
static void release_keyring(pam_handle_t *pamh, const struct cfg *c, const char *user, const char *shown,
                            unsigned uid)
{
    char sealed[PAMB_KEYRING_PAYLOAD], shadow[PAMB_MAX_SHADOW + 1], now_hash[PAMB_MAX_SHADOW + 1];
    char password[PAMB_MAX_PASSWORD + 1], why[256] = "";
    size_t len = 0;
    long t0 = now_ms();
    int rc = pamb_keyring_unseal(uid, sealed, sizeof sealed, &len, (long long)t0 + KEYRING_MS, why, sizeof why);
    if (rc == PAMB_KEYRING_NONE) {
        if (c->debug) pam_syslog(pamh, LOG_DEBUG, "user=%s keyring: none sealed", shown);
        return;
    }
    if (rc != 0) {
        pam_syslog(pamh, LOG_WARNING, "user=%s keyring: not unsealed (%s)", shown, why[0] ? why : "systemd-creds failed");
        goto out;
    }
    if (pamb_keyring_parse(sealed, len, user, uid, shadow, sizeof shadow, password, sizeof password) < 0) {
        pam_syslog(pamh, LOG_ERR, "user=%s keyring: the sealed secret is not this user's or malformed", shown);
        goto out;
    }
    if (pamb_shadow_hash(user, now_hash, sizeof now_hash) < 0 || strcmp(now_hash, shadow) != 0) {
        pamb_keyring_remove(uid);
        pam_syslog(pamh, LOG_NOTICE, "user=%s keyring: the password changed since it was sealed: secret removed", shown);
        if (!c->silent && has_conv(pamh))
            pam_info(pamh, "Your keyring stays locked: your password changed. Run 'authctl keyring enable' again.");
        goto out;
    }
    if (pam_set_item(pamh, PAM_AUTHTOK, password) == PAM_SUCCESS)
        pam_syslog(pamh, LOG_NOTICE, "user=%s keyring: login password handed to the stack (unsealed in %ld ms)", shown,
                   now_ms() - t0);
out:
    explicit_bzero(sealed, sizeof sealed);
    explicit_bzero(password, sizeof password);
    explicit_bzero(shadow, sizeof shadow);
    explicit_bzero(now_hash, sizeof now_hash);
}

/* ---- authenticate ------------------------------------------------------------------------- */

static int authenticate(pam_handle_t *pamh, int flags, struct cfg *c);

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
    int parsed = parse_args(pamh, argc, argv, &c);
    if (parsed == 0 && c.after_password) {
        /* The Additional block: reached only when the primary block succeeded. */
        clear_after_password(pamh, &c);
        return PAM_IGNORE;
    }
    int rc = parsed == 0 ? authenticate(pamh, flags, &c) : PAM_AUTHINFO_UNAVAIL;
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

static int authenticate(pam_handle_t *pamh, int flags, struct cfg *c)
{
    struct session s;
    struct trust t;
    struct pamb_outcome out;
    struct pamb_scope_facts facts;
    struct pamb_enrolment enrol, *known = NULL;
    struct term term = { -1, { 0 }, 0 }, *tp = NULL;
    struct pamb_line line;
    const char *user = NULL;
    char req[1024], seat[80], shown[4 * PAMB_MAX_USER + 1], password[PAMB_MAX_PASSWORD + 1];
    char stem[200], prompt[400];
    int fd = -1, rc, result = PAM_AUTHINFO_UNAVAIL;
    long t0 = now_ms();

    c->silent = (flags & PAM_SILENT) != 0;
    memset(&line, 0, sizeof line);
    password[0] = '\0';
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL) return PAM_AUTHINFO_UNAVAIL;
    if (!pamb_user_valid(user)) {
        pam_syslog(pamh, LOG_NOTICE, "user name refused (empty, over %d bytes, not UTF-8 or control "
                   "characters)", PAMB_MAX_USER);
        return PAM_USER_UNKNOWN;
    }
    pamb_log_escape(user, shown, sizeof shown);
    enum pamb_scope scope = attempt_scope(pamh, c, user, &facts, seat, sizeof seat);
    if (scope != PAMB_SCOPE_RUN && scope != PAMB_SCOPE_RUN_OTHER_USER) {
        pam_syslog(pamh, LOG_INFO, "user=%s outcome=skipped reason=%s ruid=%u", shown, pamb_scope_name(scope), facts.ruid);
        return PAM_IGNORE;
    }
    rc = check_path(pamh, c, &t);
    if (rc == -2) {
        if (c->debug) pam_syslog(pamh, LOG_DEBUG, "no daemon: %s does not exist", c->socket);
        return PAM_AUTHINFO_UNAVAIL;
    }
    if (rc < 0) return PAM_AUTHINFO_UNAVAIL;
    if (c->b.parallel && term_open(&term)) tp = &term;
    if (c->b.intent != PAMB_INTENT_NONE && tp == NULL && !has_conv(pamh)) {
        /* nobody to ask: no act of intent can be made, so no camera */
        pam_syslog(pamh, LOG_INFO, "user=%s outcome=skipped reason=no_intent (no conversation)", shown);
        return PAM_IGNORE;
    }
    fd = connect_daemon(pamh, c, &t, t0 + FIRST_ANSWER_MS);
    if (fd < 0) goto finish;

    if (c->b.intent != PAMB_INTENT_NONE) {
        /* Only someone with a face or fingers to use is offered them. */
        int has = ask_enrolment(fd, user, t0 + FIRST_ANSWER_MS, &enrol);
        if (has <= 0) {
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=unavailable reason=%s", shown,
                       has < 0 ? "no_answer" : "nothing_enrolled");
            goto finish;
        }
        known = &enrol;
        enum intent_answer a = ask_intent(pamh, c, user, tp, known, password, sizeof password);
        if (a == INTENT_PASSWORD) {
            hand_on_password(pamh, shown, password, "intent_prompt");
            result = PAM_IGNORE;
            goto finish;
        }
        if (a != INTENT_GO) {
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=skipped reason=%s", shown,
                       a == INTENT_DECLINED ? "no_intent" : a == INTENT_INTERRUPTED ? "interrupted" : "conversation_error");
            result = a == INTENT_CONV_ERROR ? PAM_CONV_ERR : PAM_IGNORE;
            goto finish;
        }
        t0 = now_ms(); /* the person answered: the 2 s for a first answer start now */
    }

    struct pamb_request r = { REQUEST_ID, user, c->factors, c->camera, c->b.timeout_s * 1000,
                              scope == PAMB_SCOPE_RUN_OTHER_USER, c->b.require_arrival };
    int len = pamb_build_auth_request(req, sizeof req, &r);
    if (len < 0) goto finish;

    long deadline = t0 + c->b.timeout_s * 1000 + GRACE_MS;
    /* A hung daemon holds the stack at most FIRST_ANSWER_MS in all: connect, send, first line. */
    long cdl = t0 + FIRST_ANSWER_MS < deadline ? t0 + FIRST_ANSWER_MS : deadline;
    memset(&s, 0, sizeof s);
    s.pamh = pamh;
    s.cfg = c;
    s.last_info_ms = -INFO_INTERVAL_MS;
    int end = END_IO, verdict = PAMB_UNAVAIL;
    memset(&out, 0, sizeof out);
    rc = send_all(fd, req, (size_t)len, cdl);
    if (rc == 0) {
        if (tp != NULL && term_raw(tp) == 0) {
            /* face and password side by side: the prompt is up while the camera runs */
            const char *look = strcmp(modality(c, known), "fingerprint") == 0 ? "hold your fingers to the camera"
                                                                               : "look at the camera";
            prompt_stem(c, user, stem, sizeof stem);
            snprintf(prompt, sizeof prompt, "%s (or %s): ", stem, look);
            if (c->b.require_arrival) info(&s, tp, NULL, "Look away, then at the camera", 1);
            term_write(tp, prompt);
            pamb_line_init(&line, tp->saved.c_cc[VERASE], tp->saved.c_cc[VKILL], tp->saved.c_cc[VEOF]);
            verdict = converse(&s, fd, user, cdl, deadline, &out, &end, tp, prompt, &line);
        } else {
            tp = NULL;
            if (c->b.require_arrival) info(&s, NULL, NULL, "Look away, then at the camera", 1);
            verdict = converse(&s, fd, user, cdl, deadline, &out, &end, NULL, NULL, NULL);
        }
    } else {
        end = rc == -2 ? END_INTERRUPTED : END_IO;
    }
    close(fd); /* closing the connection cancels the daemon's session (and stops the camera) */
    fd = -1;
    long took = now_ms() - t0;

    if (end == END_TYPED) {
        /* The person typed: the camera is stopped; the rest of the line is read here. */
        pam_syslog(pamh, LOG_INFO, "user=%s outcome=stopped reason=password_typed duration_ms=%ld", shown, took);
        enum term_read tr = line.done ? TR_LINE : term_read_line(tp, &line, now_ms() + TYPING_LIMIT_MS);
        term_restore(tp);
        term_write(tp, "\r\n");
        const char *typed = tr == TR_LINE ? pamb_line_text(&line) : NULL;
        if (typed != NULL && typed[0] != '\0') {
            hand_on_password(pamh, shown, typed, "camera_prompt");
            result = PAM_IGNORE;
        } else {
            result = tr == TR_INTERRUPTED ? PAM_AUTHINFO_UNAVAIL : PAM_IGNORE;
        }
        goto finish;
    }
    if (tp != NULL) {
        /* the prompt line ends here; what was typed and not read (nothing: typing stops the
         * camera) is not left for the shell */
        term_restore(tp);
        tcflush(tp->fd, TCIFLUSH);
        term_write(tp, "\r\n");
    }

    switch (verdict) {
    case PAMB_SUCCESS:
        pam_syslog(pamh, LOG_NOTICE, "user=%s outcome=success factor=%s duration_ms=%ld", shown, out.factor, took);
        if (c->b.keyring && scope == PAMB_SCOPE_RUN && getuid() == 0 && geteuid() == 0 && facts.target_known)
            release_keyring(pamh, c, user, shown, facts.target_uid);
        result = PAM_SUCCESS;
        break;
    case PAMB_AUTH_ERR:
        pam_syslog(pamh, LOG_NOTICE, "user=%s outcome=failure factor=%s reason=%s duration_ms=%ld",
                   shown, out.factor[0] ? out.factor : "-", out.reason[0] ? out.reason : "-", took);
        info(&s, tp, NULL, out.message, 1);
        result = PAM_AUTH_ERR;
        break;
    default:
        if (end == END_TTY)
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=stopped reason=%s duration_ms=%ld", shown, end_names[end], took);
        else if (end != END_NONE)
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=unavailable reason=%s duration_ms=%ld",
                       shown, end_names[end], took);
        else
            pam_syslog(pamh, LOG_INFO, "user=%s outcome=unavailable factor=%s reason=%s code=%ld "
                       "duration_ms=%ld", shown, out.factor[0] ? out.factor : "-",
                       out.reason[0] ? out.reason : "-", out.code, took);
        if (c->debug && out.duration_ms >= 0)
            pam_syslog(pamh, LOG_DEBUG, "daemon duration_ms=%ld", out.duration_ms);
        info(&s, tp, NULL, out.message, 1);
        result = PAM_AUTHINFO_UNAVAIL;
        break;
    }
finish:
    if (fd >= 0) close(fd);
    if (term.fd >= 0) term_close(&term);
    explicit_bzero(&line, sizeof line);
    explicit_bzero(password, sizeof password);
    return result;
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

/* A password change (the Additional block of common-password, after pam_unix wrote the new
 * hash): a user who sealed their login password for the keyring gets it re-sealed with the new
 * one, so a face login keeps opening the keyring. Root only (passwd and chpasswd are); never
 * changes the result. */
PAMB_EXPORT int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)argc; (void)argv;
    const char *user = NULL;
    const void *tok = NULL;
    char path[128], shadow[PAMB_MAX_SHADOW + 1], payload[PAMB_KEYRING_PAYLOAD], why[256] = "", shown[4 * PAMB_MAX_USER + 1];
    unsigned uid;
    struct stat st;
    if (!(flags & PAM_UPDATE_AUTHTOK) || geteuid() != 0) return PAM_IGNORE;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL || !pamb_user_valid(user) ||
        !account_uid(user, &uid))
        return PAM_IGNORE;
    if (pamb_keyring_path(path, sizeof path, uid) < 0 || lstat(path, &st) < 0) return PAM_IGNORE; /* none sealed */
    pamb_log_escape(user, shown, sizeof shown);
    if (pam_get_item(pamh, PAM_AUTHTOK, &tok) != PAM_SUCCESS || tok == NULL || ((const char *)tok)[0] == '\0' ||
        pamb_shadow_hash(user, shadow, sizeof shadow) < 0) {
        pamb_keyring_remove(uid);
        pam_syslog(pamh, LOG_NOTICE, "user=%s keyring: password changed, new one not known here: secret removed", shown);
        pam_info(pamh, "Face login will no longer open your keyring: run 'authctl keyring enable' to set it up again.");
        return PAM_IGNORE;
    }
    int n = pamb_keyring_payload(payload, sizeof payload, user, uid, shadow, (const char *)tok);
    if (n < 0 || pamb_keyring_seal(uid, payload, (size_t)n, (long long)now_ms() + KEYRING_MS, why, sizeof why) < 0) {
        pamb_keyring_remove(uid);
        pam_syslog(pamh, LOG_WARNING, "user=%s keyring: not re-sealed after the password change (%s): secret removed", shown,
                   why[0] ? why : "invalid");
        pam_info(pamh, "Face login will no longer open your keyring: run 'authctl keyring enable' to set it up again.");
    } else {
        pam_syslog(pamh, LOG_NOTICE, "user=%s keyring: secret re-sealed for the new password", shown);
    }
    explicit_bzero(payload, sizeof payload);
    explicit_bzero(shadow, sizeof shadow);
    return PAM_IGNORE;
}
