/*
 * biometricd-password: the root-owned helper that proves a user's account password to biometricd
 * (Docs/auth.md, "Proving the account password (first factor)").
 *
 * A client running as the user (authctl) gets a nonce from the daemon (auth.password.begin),
 * connects here and sends one line
 *     {"user":"alice","nonce":"<43 base64url chars>","password":"..."}
 * This helper, running as root, checks that the peer (SO_PEERCRED) is alice (or root), runs the
 * "biometricd-enroll" PAM service for alice with that password (pam_authenticate +
 * pam_acct_mgmt), wipes the password, and on success tells the daemon, over the daemon's own
 * socket and as root, {"method":"auth.password.proven","params":{"user":"alice","nonce":...}}.
 * The client gets one line back: {"ok":true} or {"ok":false,"reason":...,"message":...}.
 *
 * Built by scripts/build-password-helper.sh with -DBIOMETRICD_PASSWORD_HELPER, with the strict
 * JSON reader of the PAM module (bjson.c). Everything below is inside that #ifdef because every
 * C file in Sources/PAM is also compiled into pam_biometricd.so (scripts/build-pam.sh) and into
 * SwiftPM's PAMBiometricd target: there this file must be empty.
 *
 * Processes: the parent only accepts, checks the peer's uid and forks one child per request, at
 * most --max-children at a time and one per uid: a second connection from a uid whose check is
 * still running waits for it (up to the client timeout), a third is answered "busy" at once. A
 * child that runs longer than CHILD_HARD_LIMIT_S is killed. Nothing goes through a shell; no
 * secret is in argv. The one program a child runs is systemd-creds (keyring.seal, keyring.c:
 * posix_spawn with a fixed argv and environment, the sealed text on a pipe).
 *
 * The keyring (issue 36, Docs/auth.md "The keyring"): {"op":"keyring.seal","user","password"}
 * checks the password with the same PAM service and timing as the proof, then seals it with the
 * TPM (systemd-creds --with-key=host+tpm2) into /var/lib/biometricd-keyring/UID.cred, root's
 * 0600 file, for the PAM module to hand to pam_gnome_keyring after a face login;
 * keyring.remove and keyring.status act on the caller's own (root: anyone's). The daemon is not
 * told: it never sees the password.
 */
#ifdef BIOMETRICD_PASSWORD_HELPER

#define _GNU_SOURCE
#include "bjson.h"
#include "pam_biometricd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <security/pam_appl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define PWH_SERVICE "biometricd-enroll"
#define DEFAULT_SOCKET "/run/biometricd-password/password.sock"
#define DEFAULT_DAEMON_SOCKET "/run/biometricd/biometricd.sock"
#define DEFAULT_DAEMON_USER "biometricd"
#define MAX_REQUEST 4096           /* one request line, "\n" included */
#define MAX_PASSWORD 512           /* bytes, after JSON unescaping */
#define MAX_USER 128               /* bytes, as the PAM module */
#define NONCE_LEN 43               /* 32 bytes, base64url without padding */
#define MAX_DAEMON_LINE 65536
#define MAX_TOKENS 64
#define MAX_DAEMON_TOKENS 4096
/* One answer for a wrong password and a right one of an account that may not log in, so that
 * neither the words nor the time tell a guesser which (the log tells the administrator). */
#define REFUSED_MESSAGE "the password was not accepted (wrong, or the account may not log in: expired, locked or a password change required)"
#define REFUSAL_MS 2000            /* every refusal of a checked password is answered this long after PAM began */
#define CHILD_HARD_LIMIT_S 60      /* a child still running after this is killed */
#define MAX_CHILDREN_LIMIT 16

static const char *g_daemon_socket = DEFAULT_DAEMON_SOCKET;
static const char *g_daemon_user = DEFAULT_DAEMON_USER;
static int g_client_timeout_s = 10;
static int g_daemon_timeout_s = 10;
static int g_verbose = 0;

/* The secrets of the one request a child handles: the raw line and the decoded password. Static
 * so that they can be locked into RAM (never swapped) and wiped in one place. */
static char g_line[MAX_REQUEST + 1];
static char g_password[MAX_PASSWORD + 1];
/* keyring.seal: the text sealed for the keyring (it holds the password). */
static char g_payload[PAMB_KEYRING_PAYLOAD];

static void wipe_secrets(void)
{
    explicit_bzero(g_line, sizeof g_line);
    explicit_bzero(g_password, sizeof g_password);
    explicit_bzero(g_payload, sizeof g_payload);
}

/* One log line on stderr (the journal under systemd). Never given the password. */
__attribute__((format(printf, 1, 2)))
static void logmsg(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    dprintf(STDERR_FILENO, "biometricd-password[%ld]: %s\n", (long)getpid(), buf);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- JSON writing ------------------------------------------------------------------------ */

/* Appends s as the body of a JSON string (no quotes) to buf[*o..cap), escaping '"', '\\' and
 * every control character; cuts at max_in input bytes on a UTF-8 boundary. s must be valid
 * UTF-8 (everything written here is: fixed texts, names from passwd checked by bjson, or text
 * the strict reader accepted). Returns -1 when buf is full. */
static int json_escape(char *buf, size_t cap, size_t *o, const char *s, size_t max_in)
{
    size_t n = strlen(s);
    if (n > max_in) {
        n = max_in;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--; /* do not split a sequence */
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        const char *put = tmp;
        size_t k;
        if (c == '"') put = "\\\"";
        else if (c == '\\') put = "\\\\";
        else if (c < 0x20 || c == 0x7f) snprintf(tmp, sizeof tmp, "\\u%04x", c);
        else { tmp[0] = (char)c; tmp[1] = '\0'; }
        k = strlen(put);
        if (*o + k >= cap) return -1;
        memcpy(buf + *o, put, k);
        *o += k;
    }
    buf[*o] = '\0';
    return 0;
}

/* Copies valid UTF-8 src into dst[cap], cut on a character boundary when it does not fit. */
static void copy_utf8(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (cap == 0) return;
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80) n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int append(char *buf, size_t cap, size_t *o, const char *s)
{
    size_t k = strlen(s);
    if (*o + k >= cap) return -1;
    memcpy(buf + *o, s, k);
    *o += k;
    buf[*o] = '\0';
    return 0;
}

/* ---- sockets ----------------------------------------------------------------------------- */

/* Writes all of buf before the deadline; never raises SIGPIPE. */
static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) { off += (size_t)w; continue; }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            long long left = deadline - now_ms();
            if (left <= 0) return -1;
            struct pollfd p = { .fd = fd, .events = POLLOUT };
            if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR) return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

enum read_result { READ_LINE = 0, READ_EOF = -1, READ_TOO_LONG = -2, READ_TIMEOUT = -3, READ_ERROR = -4 };


/* Reads until a "\n" is in buf[0..*have) with at most cap-1 bytes before it, or until the
 * deadline. The line is buf[0..*len), NUL-terminated where its "\n" was; whatever follows it
 * stays in buf[*len+1..*have) for the next call after drop_line(). */
static int read_line(int fd, char *buf, size_t cap, size_t *have, size_t *len, long long deadline)
{
    size_t scanned = 0;
    for (;;) {
        char *nl = memchr(buf + scanned, '\n', *have - scanned);
        if (nl) {
            *nl = '\0';
            *len = (size_t)(nl - buf);
            return READ_LINE;
        }
        scanned = *have;
        if (*have + 1 >= cap) return READ_TOO_LONG;
        long long left = deadline - now_ms();
        if (left <= 0) return READ_TIMEOUT;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int pr = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (pr < 0) { if (errno == EINTR) continue; return READ_ERROR; }
        if (pr == 0) continue;
        ssize_t r = recv(fd, buf + *have, cap - 1 - *have, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return READ_ERROR;
        }
        if (r == 0) return READ_EOF;
        *have += (size_t)r;
    }
}

/* Forgets the line read_line() returned, keeping what followed it. */
static void drop_line(char *buf, size_t *have, size_t len)
{
    size_t rest = *have - (len + 1);
    memmove(buf, buf + len + 1, rest);
    *have = rest;
}

static int peer_uid(int fd, uid_t *uid)
{
    struct ucred cr;
    socklen_t l = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0 || l != sizeof cr) return -1;
    *uid = cr.uid;
    return 0;
}

/* ---- answers to the client -------------------------------------------------------------- */

static void reply(int fd, int ok, const char *reason, const char *message, const char *detail)
{
    char buf[4096];
    size_t o = 0;
    if (ok) {
        append(buf, sizeof buf, &o, "{\"ok\":true}\n");
    } else {
        int bad = append(buf, sizeof buf, &o, "{\"ok\":false,\"reason\":\"") < 0 ||
                  json_escape(buf, sizeof buf, &o, reason, 64) < 0 ||
                  append(buf, sizeof buf, &o, "\",\"message\":\"") < 0 ||
                  json_escape(buf, sizeof buf, &o, message, 300) < 0;
        if (!bad && detail && detail[0])
            bad = append(buf, sizeof buf, &o, ": ") < 0 || json_escape(buf, sizeof buf, &o, detail, 300) < 0;
        if (bad || append(buf, sizeof buf, &o, "\"}\n") < 0) {
            o = 0;
            append(buf, sizeof buf, &o, "{\"ok\":false,\"reason\":\"internal\",\"message\":\"internal error\"}\n");
        }
    }
    (void)send_all(fd, buf, o, now_ms() + 2000);
}

/* ---- the request ------------------------------------------------------------------------- */

static int nonce_valid(const char *s)
{
    size_t n = strlen(s);
    if (n != NONCE_LEN) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

/* 1..MAX_USER bytes (already valid UTF-8: it came through bjson), no control characters. */
static int user_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_USER) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) return 0;
        if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 && (unsigned char)s[i + 1] <= 0x9f)
            return 0; /* C1 controls */
    }
    return 1;
}

enum op { OP_PROVE = 0, OP_KEYRING_SEAL, OP_KEYRING_REMOVE, OP_KEYRING_STATUS };

struct request {
    enum op op;
    char user[MAX_USER + 1];
    char nonce[NONCE_LEN + 1];
    /* the password goes to g_password */
};

/* Parses the request line strictly: one object with exactly the members its operation takes,
 * all strings (no other member, no duplicate, no NUL). Returns NULL or the reason it is refused.
 *   {"user","nonce","password"}                    the password proof (auth.password.proven)
 *   {"op":"keyring.seal","user","password"}        seal the login password for the keyring
 *   {"op":"keyring.remove","user"}                 forget it
 *   {"op":"keyring.status","user"}                 is one sealed? */
static const char *parse_request(const char *line, size_t len, struct request *rq)
{
    struct bjson_tok toks[MAX_TOKENS];
    struct bjson_doc doc;
    const char *why = NULL;
    rq->op = OP_PROVE;
    if (bjson_parse(&doc, line, len, toks, MAX_TOKENS) < 0) why = "the request is not one strict JSON object";
    else if (bjson_type(&doc, 0) != BJSON_OBJECT) why = "the request is not a JSON object";
    else {
        int o = bjson_get(&doc, 0, "op");
        unsigned int want = 3;
        int need_nonce = 1, need_password = 1;
        if (o == -2) why = "duplicate member op";
        else if (o >= 0) {
            if (bjson_str_eq(&doc, o, "keyring.seal")) { rq->op = OP_KEYRING_SEAL; need_nonce = 0; }
            else if (bjson_str_eq(&doc, o, "keyring.remove")) { rq->op = OP_KEYRING_REMOVE; need_nonce = 0; need_password = 0; want = 2; }
            else if (bjson_str_eq(&doc, o, "keyring.status")) { rq->op = OP_KEYRING_STATUS; need_nonce = 0; need_password = 0; want = 2; }
            else why = "op must be keyring.seal, keyring.remove or keyring.status";
        }
        int u = bjson_get(&doc, 0, "user"), n = bjson_get(&doc, 0, "nonce"), p = bjson_get(&doc, 0, "password");
        if (why) {
        } else if (toks[0].count != want || u < 0 || (need_nonce && n < 0) || (!need_nonce && n != -1) ||
                   (need_password && p < 0) || (!need_password && p != -1)) {
            why = rq->op == OP_PROVE ? "the request must have exactly the members user, nonce and password"
                : rq->op == OP_KEYRING_SEAL ? "keyring.seal takes exactly the members op, user and password"
                : "this op takes exactly the members op and user";
        } else if (bjson_type(&doc, u) != BJSON_STRING || (need_nonce && bjson_type(&doc, n) != BJSON_STRING) ||
                   (need_password && bjson_type(&doc, p) != BJSON_STRING))
            why = rq->op == OP_PROVE ? "user, nonce and password must be strings" : "user and password must be strings";
        else if (bjson_str(&doc, u, rq->user, sizeof rq->user) < 0 || !user_valid(rq->user))
            why = "invalid user name";
        else if (need_nonce && (bjson_str(&doc, n, rq->nonce, sizeof rq->nonce) < 0 || !nonce_valid(rq->nonce)))
            why = "the nonce must be 43 base64url characters (from auth.password.begin)";
        else if (need_password) {
            int pl = bjson_str(&doc, p, g_password, sizeof g_password);
            if (pl < 0) why = "the password is longer than 512 bytes or contains NUL";
            else if (pl == 0) why = "empty password";
        }
    }
    explicit_bzero(toks, sizeof toks);
    return why;
}

/* ---- PAM --------------------------------------------------------------------------------- */

static int conv(int n, const struct pam_message **msg, struct pam_response **resp, void *appdata)
{
    (void)appdata;
    if (n <= 0 || n > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
    struct pam_response *r = calloc((size_t)n, sizeof *r);
    if (!r) return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        switch (msg[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
            /* The password: PAM owns (and wipes) this copy. */
            r[i].resp = strdup(g_password);
            if (!r[i].resp) goto fail;
            break;
        case PAM_ERROR_MSG:
        case PAM_TEXT_INFO:
            break; /* nobody to show it to: the reason we answer is enough */
        default:
            goto fail; /* PAM_PROMPT_ECHO_ON and anything else: no answer we could give */
        }
    }
    *resp = r;
    return PAM_SUCCESS;
fail:
    for (int i = 0; i < n; i++) {
        if (r[i].resp) {
            explicit_bzero(r[i].resp, strlen(r[i].resp));
            free(r[i].resp);
        }
    }
    free(r);
    return PAM_CONV_ERR;
}

enum pam_outcome { PW_OK, PW_WRONG, PW_ACCOUNT, PW_INTERNAL };

/* PAM's own fail delay is random (±25 %) and applies only to a failed pam_authenticate, so a
 * right password of an expired account used to answer in 0.04 s and a wrong one in ~2.4 s: the
 * timing told which. PAM calls this instead of sleeping; serve() then answers every refusal
 * REFUSAL_MS after PAM began (issue 33, item 9). */
static void no_fail_delay(int status, unsigned int usec, void *appdata)
{
    (void)status; (void)usec; (void)appdata;
}

static enum pam_outcome check_password(const char *user, const char *ruser, int *code)
{
    struct pam_conv c = { conv, NULL };
    pam_handle_t *h = NULL;
    int rc = pam_start(PWH_SERVICE, user, &c, &h);
    enum pam_outcome out = PW_INTERNAL;
    *code = rc;
    if (rc != PAM_SUCCESS) return PW_INTERNAL;
    (void)pam_set_item(h, PAM_RUSER, ruser);
    void (*delay)(int, unsigned int, void *) = no_fail_delay;
    (void)pam_set_item(h, PAM_FAIL_DELAY, (const void *)delay);
    rc = pam_authenticate(h, PAM_DISALLOW_NULL_AUTHTOK);
    *code = rc;
    if (rc == PAM_SUCCESS) {
        rc = pam_acct_mgmt(h, PAM_DISALLOW_NULL_AUTHTOK);
        *code = rc;
        out = rc == PAM_SUCCESS ? PW_OK : (rc == PAM_ACCT_EXPIRED || rc == PAM_NEW_AUTHTOK_REQD ||
                                           rc == PAM_PERM_DENIED || rc == PAM_AUTH_ERR ||
                                           rc == PAM_USER_UNKNOWN) ? PW_ACCOUNT : PW_INTERNAL;
    } else if (rc == PAM_AUTH_ERR || rc == PAM_USER_UNKNOWN || rc == PAM_MAXTRIES ||
               rc == PAM_CRED_INSUFFICIENT || rc == PAM_PERM_DENIED) {
        out = PW_WRONG;
    } /* PAM_AUTHINFO_UNAVAIL (no shadow entry, or not run as root), PAM_CONV_ERR, PAM_SYSTEM_ERR,
       * PAM_SERVICE_ERR, ...: the password could not be checked at all -> internal. */
    pam_end(h, rc);
    return out;
}

/* ---- the daemon -------------------------------------------------------------------------- */

enum daemon_outcome { D_OK, D_UNREACHABLE, D_REFUSED };

static int uid_of(const char *name, uid_t *uid)
{
    char buf[4096];
    struct passwd pw, *res = NULL;
    if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res) return -1;
    *uid = res->pw_uid;
    return 0;
}

/* Sends auth.password.proven and reads the answer. detail gets the daemon's error message (or
 * why it could not be reached). */
static enum daemon_outcome tell_daemon(const char *user, const char *nonce, char *detail, size_t dcap)
{
    static char line[MAX_DAEMON_LINE + 1];
    static struct bjson_tok toks[MAX_DAEMON_TOKENS];
    char req[1024];
    size_t o = 0;
    long long deadline = now_ms() + (long long)g_daemon_timeout_s * 1000;
    enum daemon_outcome out = D_UNREACHABLE;
    detail[0] = '\0';

    if (append(req, sizeof req, &o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"auth.password.proven\",\"params\":{\"user\":\"") < 0 ||
        json_escape(req, sizeof req, &o, user, MAX_USER) < 0 ||
        append(req, sizeof req, &o, "\",\"nonce\":\"") < 0 || append(req, sizeof req, &o, nonce) < 0 ||
        append(req, sizeof req, &o, "\"}}\n") < 0) {
        snprintf(detail, dcap, "request too long");
        return D_UNREACHABLE;
    }

    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(g_daemon_socket) >= sizeof sa.sun_path) { snprintf(detail, dcap, "socket path too long"); return D_UNREACHABLE; }
    strcpy(sa.sun_path, g_daemon_socket);
    /* A blocking connect bounded by SO_SNDTIMEO: on a Unix socket whose backlog is full it waits
     * (up to 2 s) for room instead of failing with EAGAIN at once. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { snprintf(detail, dcap, "socket: %s", strerror(errno)); return D_UNREACHABLE; }
    struct timeval tv = { .tv_sec = 2, .tv_usec = 0 };
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int rc;
    do rc = connect(fd, (struct sockaddr *)&sa, sizeof sa); while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        snprintf(detail, dcap, "%s: %s", g_daemon_socket,
                 errno == EAGAIN || errno == EINPROGRESS ? "no room in its backlog for 2 s" : strerror(errno));
        close(fd);
        return D_UNREACHABLE;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        snprintf(detail, dcap, "fcntl: %s", strerror(errno));
        close(fd);
        return D_UNREACHABLE;
    }
    /* The proof goes only to a daemon running as root or as the daemon's user. */
    uid_t du, want;
    if (peer_uid(fd, &du) != 0 || !(du == 0 || (g_daemon_user[0] && uid_of(g_daemon_user, &want) == 0 && du == want))) {
        snprintf(detail, dcap, "%s is not served by root or %s", g_daemon_socket, g_daemon_user[0] ? g_daemon_user : "root");
        close(fd);
        return D_UNREACHABLE;
    }
    if (send_all(fd, req, o, deadline) != 0) {
        snprintf(detail, dcap, "could not send to the daemon");
        close(fd);
        return D_UNREACHABLE;
    }
    /* One reply line; notifications (a "method" and no "id") are skipped. */
    size_t len_prev = 0;
    size_t have = 0;
    for (int lines = 0; lines < 64; lines++) {
        size_t len = 0;
        if (lines > 0) drop_line(line, &have, len_prev);
        int r = read_line(fd, line, sizeof line, &have, &len, deadline);
        len_prev = len;
        if (r != READ_LINE) {
            snprintf(detail, dcap, "%s", r == READ_TIMEOUT ? "no answer from the daemon" :
                                         r == READ_TOO_LONG ? "over-long answer from the daemon" :
                                         "the daemon closed the connection without an answer");
            break;
        }
        struct bjson_doc doc;
        if (bjson_parse(&doc, line, len, toks, MAX_DAEMON_TOKENS) < 0 || bjson_type(&doc, 0) != BJSON_OBJECT) {
            snprintf(detail, dcap, "garbage from the daemon");
            break;
        }
        int id = bjson_get(&doc, 0, "id"), m = bjson_get(&doc, 0, "method");
        if (id == -1 && m >= 0) continue; /* a notification */
        long long idv;
        int res = bjson_get(&doc, 0, "result"), er = bjson_get(&doc, 0, "error");
        if (!bjson_str_eq(&doc, bjson_get(&doc, 0, "jsonrpc"), "2.0") || id < 0 || bjson_int(&doc, id, &idv) != 0 ||
            idv != 1 || m != -1 || res == -2 || er == -2 || (res >= 0) == (er >= 0)) {
            snprintf(detail, dcap, "malformed answer from the daemon");
            break;
        }
        if (res >= 0) {
            /* Only {"ok": true} is a proof the daemon took (issue 33, item 8): any other result
             * (ok false or missing, not an object) is a refusal. */
            int ok = bjson_type(&doc, res) == BJSON_OBJECT ? bjson_get(&doc, res, "ok") : -1;
            if (ok >= 0 && bjson_type(&doc, ok) == BJSON_TRUE) {
                out = D_OK;
            } else {
                snprintf(detail, dcap, "the daemon did not answer ok: true");
                out = D_REFUSED;
            }
            break;
        }
        out = D_REFUSED;
        static char msg[MAX_DAEMON_LINE];
        int mi = bjson_get(&doc, er, "message");
        if (bjson_type(&doc, mi) == BJSON_STRING && bjson_str(&doc, mi, msg, sizeof msg) >= 0)
            copy_utf8(detail, dcap, msg);
        else
            snprintf(detail, dcap, "error without a message");
        break;
    }
    close(fd);
    return out;
}

/* ---- one connection (in a child) ----------------------------------------------------------- */

static int name_of(uid_t uid, char *name, size_t cap)
{
    char buf[4096];
    struct passwd pw, *res = NULL;
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res || strlen(res->pw_name) >= cap) return -1;
    strcpy(name, res->pw_name);
    return 0;
}

/* ---- the keyring secret (Docs/auth.md "The keyring") ---------------------------------------- */

static void reply_raw(int fd, const char *line)
{
    (void)send_all(fd, line, strlen(line), now_ms() + 2000);
}

/* After PAM accepted the password (just now, in this child): it is sealed by the TPM for the
 * user's keyring (pamb_keyring_seal: systemd-creds --with-key=host+tpm2, root's 0600 file), with
 * the shadow hash it matched, so a later change is seen. The password was only ever in this
 * child's locked buffers and the pipe to systemd-creds. */
static int keyring_seal(int fd, uid_t uid, const struct request *rq)
{
    uid_t target;
    char shadow[PAMB_MAX_SHADOW + 1], why[300] = "";
    int rc = 1;
    if (uid_of(rq->user, &target) != 0 || pamb_shadow_hash(rq->user, shadow, sizeof shadow) != 0) {
        snprintf(why, sizeof why, "no passwd or shadow entry for the user");
    } else {
        int n = pamb_keyring_payload(g_payload, sizeof g_payload, rq->user, (unsigned)target, shadow, g_password);
        if (n < 0) snprintf(why, sizeof why, "the password cannot be sealed (too long)");
        else if (pamb_keyring_seal((unsigned)target, g_payload, (size_t)n, now_ms() + (long long)g_daemon_timeout_s * 1000,
                                   why, sizeof why) == 0)
            rc = 0;
    }
    wipe_secrets();
    explicit_bzero(shadow, sizeof shadow);
    if (rc == 0) {
        logmsg("uid=%u user=%s outcome=keyring_sealed", (unsigned)uid, rq->user);
        reply_raw(fd, "{\"ok\":true,\"sealed\":true}\n");
    } else {
        logmsg("uid=%u user=%s outcome=keyring_failed (%s)", (unsigned)uid, rq->user, why);
        reply(fd, 0, "keyring_failed", "the keyring secret was not sealed", why);
    }
    return rc;
}

/* keyring.remove and keyring.status: the user's own (or root's for anyone); no password needed
 * to forget one, and whether one exists says nothing secret. */
static int keyring_admin(int fd, uid_t uid, const struct request *rq)
{
    uid_t target;
    char path[128];
    struct stat st;
    if (uid_of(rq->user, &target) != 0 || pamb_keyring_path(path, sizeof path, (unsigned)target) < 0) {
        reply(fd, 0, "internal", "no passwd entry for the user", NULL);
        return 1;
    }
    if (rq->op == OP_KEYRING_STATUS) {
        int sealed = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
        reply_raw(fd, sealed ? "{\"ok\":true,\"sealed\":true}\n" : "{\"ok\":true,\"sealed\":false}\n");
        return 0;
    }
    int r = pamb_keyring_remove((unsigned)target);
    if (r < 0) {
        logmsg("uid=%u user=%s outcome=keyring_remove_failed (%s)", (unsigned)uid, rq->user, strerror(errno));
        reply(fd, 0, "internal", "the keyring secret could not be removed", strerror(errno));
        return 1;
    }
    logmsg("uid=%u user=%s outcome=keyring_removed (%s)", (unsigned)uid, rq->user, r ? "there was one" : "there was none");
    reply_raw(fd, r ? "{\"ok\":true,\"removed\":true}\n" : "{\"ok\":true,\"removed\":false}\n");
    return 0;
}

static int serve(int fd, uid_t uid)
{
    char peer[MAX_USER + 1];
    struct request rq;
    size_t len = 0, have = 0;
    memset(&rq, 0, sizeof rq);

    if (name_of(uid, peer, sizeof peer) != 0) {
        logmsg("uid=%u outcome=internal (no passwd entry for the caller)", (unsigned)uid);
        reply(fd, 0, "internal", "the caller's uid has no user name", NULL);
        return 1;
    }
    int r = read_line(fd, g_line, sizeof g_line, &have, &len, now_ms() + (long long)g_client_timeout_s * 1000);
    if (r != READ_LINE) {
        const char *why = r == READ_TOO_LONG ? "the request line is longer than 4 KiB" :
                          r == READ_TIMEOUT ? "no complete request line in time" :
                          r == READ_EOF ? "the connection ended before the end of the request line" :
                          "could not read the request";
        wipe_secrets();
        logmsg("uid=%u peer=%s outcome=bad_request (%s)", (unsigned)uid, peer, why);
        reply(fd, 0, "bad_request", why, NULL);
        return 1;
    }
    const char *why = parse_request(g_line, len, &rq);
    explicit_bzero(g_line, sizeof g_line);
    if (why) {
        wipe_secrets();
        logmsg("uid=%u peer=%s outcome=bad_request (%s)", (unsigned)uid, peer, why);
        reply(fd, 0, "bad_request", why, NULL);
        return 1;
    }
    if (uid != 0 && strcmp(rq.user, peer) != 0) {
        wipe_secrets();
        logmsg("uid=%u peer=%s outcome=not_your_user (asked for another user)", (unsigned)uid, peer);
        reply(fd, 0, "not_your_user", "you can only prove your own password", NULL);
        return 1;
    }

    if (rq.op == OP_KEYRING_REMOVE || rq.op == OP_KEYRING_STATUS)
        return keyring_admin(fd, uid, &rq);

    int code = 0;
    long long pam_began = now_ms();
    enum pam_outcome po = check_password(rq.user, peer, &code);
    /* keyring.seal keeps the password until it is sealed (keyring_seal wipes it) */
    if (!(rq.op == OP_KEYRING_SEAL && po == PW_OK)) wipe_secrets();
    if (po != PW_OK) {
        /* The same time for every refusal: a wrong password, an account that may not log in,
         * PAM unable to check. */
        long long left = pam_began + REFUSAL_MS - now_ms();
        while (left > 0) {
            struct timespec ts = { (time_t)(left / 1000), (long)(left % 1000) * 1000000L };
            if (nanosleep(&ts, NULL) == 0) break;
            left = pam_began + REFUSAL_MS - now_ms();
        }
    }
    if (po == PW_WRONG) {
        logmsg("uid=%u user=%s outcome=wrong_password pam=\"%s\"", (unsigned)uid, rq.user, pam_strerror(NULL, code));
        reply(fd, 0, "wrong_password", REFUSED_MESSAGE, NULL);
        return 1;
    }
    if (po == PW_ACCOUNT) {
        logmsg("uid=%u user=%s outcome=wrong_password account=\"%s\"", (unsigned)uid, rq.user, pam_strerror(NULL, code));
        reply(fd, 0, "wrong_password", REFUSED_MESSAGE, NULL);
        return 1;
    }
    if (po != PW_OK) {
        logmsg("uid=%u user=%s outcome=internal pam=\"%s\"", (unsigned)uid, rq.user, pam_strerror(NULL, code));
        reply(fd, 0, "internal", "PAM error", pam_strerror(NULL, code));
        return 1;
    }

    if (rq.op == OP_KEYRING_SEAL)
        return keyring_seal(fd, uid, &rq);

    char detail[300];
    enum daemon_outcome d = tell_daemon(rq.user, rq.nonce, detail, sizeof detail);
    if (d == D_OK) {
        logmsg("uid=%u user=%s outcome=ok", (unsigned)uid, rq.user);
        reply(fd, 1, NULL, NULL, NULL);
        return 0;
    }
    if (d == D_REFUSED) {
        logmsg("uid=%u user=%s outcome=daemon_refused", (unsigned)uid, rq.user);
        reply(fd, 0, "daemon_refused", "the daemon refused the proof", detail);
        return 1;
    }
    logmsg("uid=%u user=%s outcome=daemon_unreachable (%s)", (unsigned)uid, rq.user, detail);
    reply(fd, 0, "daemon_unreachable", "biometricd could not be told", detail);
    return 1;
}

/* ---- the parent ---------------------------------------------------------------------------- */

struct child { pid_t pid; uid_t uid; long long started; };
static struct child g_children[MAX_CHILDREN_LIMIT];
static int g_nchildren = 0;

static void forget_child(pid_t pid, int st)
{
    for (int i = 0; i < g_nchildren; i++) {
        if (g_children[i].pid == pid) {
            if (WIFSIGNALED(st)) logmsg("child %ld ended by signal %d", (long)pid, WTERMSIG(st));
            g_children[i] = g_children[--g_nchildren];
            return;
        }
    }
}

static void reap(void)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) forget_child(pid, st);
}

static int uid_busy(uid_t uid)
{
    for (int i = 0; i < g_nchildren; i++)
        if (g_children[i].uid == uid) return 1;
    return 0;
}

/* A connection of a uid whose check is still running waits here (one per uid, MAX_PENDING in
 * all) until that check ends, at most the client timeout; a third is answered "busy" at once. */
#define MAX_PENDING 16
struct pending { int fd; uid_t uid; long long since; };
static struct pending g_pending[MAX_PENDING];
static int g_npending = 0;

static int uid_pending(uid_t uid)
{
    for (int i = 0; i < g_npending; i++)
        if (g_pending[i].uid == uid) return 1;
    return 0;
}

static void answer_busy(int cfd, uid_t uid)
{
    static const char busy[] = "{\"ok\":false,\"reason\":\"busy\",\"message\":\"another password check for "
                               "this user is running; try again when it has answered\"}\n";
    if (g_verbose) logmsg("uid=%u outcome=busy", (unsigned)uid);
    (void)send(cfd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(cfd);
}

/* Forks the child that serves cfd; the parent keeps nothing of the connection. */
static void start_child(int cfd, uid_t uid, int lfd, int sfd)
{
    pid_t pid = fork();
    if (pid < 0) {
        logmsg("fork: %s", strerror(errno));
        reply(cfd, 0, "internal", "could not start a check", NULL);
        close(cfd);
        return;
    }
    if (pid == 0) {
        close(lfd);
        close(sfd);
        for (int i = 0; i < g_npending; i++) close(g_pending[i].fd);
        sigset_t none;
        sigemptyset(&none);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        alarm(CHILD_HARD_LIMIT_S + 5); /* a backstop to the parent's kill */
        /* Keep the secret buffers out of swap (best effort; locks are not inherited across
         * fork, so here). */
        (void)mlock(g_line, sizeof g_line);
        (void)mlock(g_password, sizeof g_password);
        (void)mlock(g_payload, sizeof g_payload);
        int rc = serve(cfd, uid);
        wipe_secrets();
        shutdown(cfd, SHUT_RDWR);
        close(cfd);
        _exit(rc);
    }
    close(cfd);
    g_children[g_nchildren++] = (struct child){ pid, uid, now_ms() };
}

/* Starts the waiting connections whose uid is free; answers "busy" to those that waited longer
 * than the client timeout. */
static void run_pending(int lfd, int sfd, int max_children)
{
    long long now = now_ms();
    for (int i = 0; i < g_npending;) {
        struct pending pd = g_pending[i];
        int start = !uid_busy(pd.uid) && g_nchildren < max_children;
        int expired = now - pd.since > (long long)g_client_timeout_s * 1000;
        if (!start && !expired) { i++; continue; }
        memmove(&g_pending[i], &g_pending[i + 1], (size_t)(g_npending - i - 1) * sizeof g_pending[0]);
        g_npending--;
        if (start) start_child(pd.fd, pd.uid, lfd, sfd);
        else answer_busy(pd.fd, pd.uid);
    }
}

static int bind_socket(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    if (strlen(path) >= sizeof sa.sun_path) { logmsg("socket path too long: %s", path); return -1; }
    strcpy(sa.sun_path, path);
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) { logmsg("%s exists and is not a socket", path); return -1; }
        unlink(path); /* a stale socket of an earlier run */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) { logmsg("socket: %s", strerror(errno)); return -1; }
    /* Mode 0666 from the umask at bind time: a chmod by path afterwards would follow a link
     * put there in between (issue 33, item 8). */
    mode_t old = umask(0111);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc != 0 || listen(fd, 16) != 0) {
        logmsg("%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: biometricd-password [--socket PATH] [--daemon-socket PATH] [--daemon-user NAME]\n"
            "                           [--max-children N] [--idle-exit SECONDS] [--client-timeout SECONDS]\n"
            "                           [--daemon-timeout SECONDS] [--verbose]\n"
            "Runs as root. Checks a user's account password with the PAM service " PWH_SERVICE "\n"
            "and reports success to biometricd (auth.password.proven). Takes a socket passed by\n"
            "systemd (biometricd-password.socket, Accept=no), else binds --socket (default\n"
            DEFAULT_SOCKET ", mode 0666). Daemon socket default: " DEFAULT_DAEMON_SOCKET ".\n");
}

static int int_arg(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *sock_path = NULL;
    int max_children = 4, idle_exit = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--verbose")) { g_verbose = 1; continue; }
        if (!v) { usage(stderr); return 2; }
        i++;
        if (!strcmp(a, "--socket")) sock_path = v;
        else if (!strcmp(a, "--daemon-socket")) g_daemon_socket = v;
        else if (!strcmp(a, "--daemon-user")) g_daemon_user = v;
        else if (!strcmp(a, "--max-children")) { if (int_arg(v, 1, MAX_CHILDREN_LIMIT, &max_children)) { usage(stderr); return 2; } }
        else if (!strcmp(a, "--idle-exit")) { if (int_arg(v, 0, 86400, &idle_exit)) { usage(stderr); return 2; } }
        else if (!strcmp(a, "--client-timeout")) { if (int_arg(v, 1, 60, &g_client_timeout_s)) { usage(stderr); return 2; } }
        else if (!strcmp(a, "--daemon-timeout")) { if (int_arg(v, 1, 60, &g_daemon_timeout_s)) { usage(stderr); return 2; } }
        else { usage(stderr); return 2; }
    }
    if (g_daemon_socket[0] != '/') { logmsg("--daemon-socket must be an absolute path"); return 2; }
    if (geteuid() != 0) logmsg("warning: not running as root; PAM can only check the password of the user it runs as");

    /* No core dumps and no ptrace by others of the same uid: children hold passwords. */
    struct rlimit nocore = { 0, 0 };
    setrlimit(RLIMIT_CORE, &nocore);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int lfd = -1;
    int passed = sd_listen_fds(1);
    if (passed > 1) { logmsg("expected one socket from systemd, got %d", passed); return 1; }
    if (passed == 1) {
        lfd = SD_LISTEN_FDS_START;
        if (sd_is_socket_unix(lfd, SOCK_STREAM, 1, NULL, 0) <= 0) { logmsg("the passed fd is not a listening Unix stream socket"); return 1; }
        if (sock_path) logmsg("--socket ignored: a socket was passed by systemd");
        sock_path = NULL;
        int fl = fcntl(lfd, F_GETFL);
        if (fl < 0 || fcntl(lfd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(lfd, F_SETFD, FD_CLOEXEC) < 0) { logmsg("fcntl: %s", strerror(errno)); return 1; }
    } else {
        if (!sock_path) sock_path = DEFAULT_SOCKET;
        lfd = bind_socket(sock_path);
        if (lfd < 0) return 1;
    }

    /* SIGCHLD, SIGTERM, SIGINT, SIGHUP arrive on a signalfd; SIGPIPE is ignored. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) { logmsg("signalfd: %s", strerror(errno)); return 1; }

    logmsg("ready: %s, daemon %s, at most %d checks at a time%s", sock_path ? sock_path : "socket from systemd",
           g_daemon_socket, max_children, passed == 1 ? " (socket-activated)" : "");
    sd_notify(0, "READY=1");

    long long last_activity = now_ms();
    int stop = 0;
    while (!stop) {
        struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = lfd, .events = POLLIN } };
        /* A full table stops accepting: further connections wait in the kernel's backlog (16),
         * and beyond it connect() fails, so a flood cannot grow this process. */
        int np = g_nchildren < max_children && g_npending < MAX_PENDING ? 2 : 1;
        int pr = poll(p, (nfds_t)np, 1000);
        if (pr < 0 && errno != EINTR) { logmsg("poll: %s", strerror(errno)); return 1; }
        if (pr > 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo != SIGCHLD) stop = 1;
            }
            reap();
        }
        long long now = now_ms();
        for (int i = 0; i < g_nchildren; i++) {
            if (now - g_children[i].started > CHILD_HARD_LIMIT_S * 1000LL) {
                logmsg("child %ld (uid %u) over %d s: killed", (long)g_children[i].pid, (unsigned)g_children[i].uid, CHILD_HARD_LIMIT_S);
                kill(g_children[i].pid, SIGKILL);
                g_children[i].started = now; /* reaped on its SIGCHLD */
            }
        }
        run_pending(lfd, sfd, max_children);
        if (g_nchildren > 0 || g_npending > 0) last_activity = now;
        if (pr > 0 && np == 2 && (p[1].revents & POLLIN)) {
            for (int k = 0; k < 32 && g_nchildren < max_children && g_npending < MAX_PENDING; k++) {
                int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0) {
                    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                        logmsg("accept: %s", strerror(errno));
                        usleep(200000);
                    }
                    break;
                }
                last_activity = now_ms();
                uid_t uid;
                if (peer_uid(cfd, &uid) != 0) { close(cfd); continue; }
                if (!uid_busy(uid)) { start_child(cfd, uid, lfd, sfd); continue; }
                if (!uid_pending(uid)) { /* waits for the uid's running check to end */
                    g_pending[g_npending++] = (struct pending){ cfd, uid, now_ms() };
                    continue;
                }
                answer_busy(cfd, uid);
            }
        }
        if (idle_exit > 0 && g_nchildren == 0 && g_npending == 0 && now_ms() - last_activity > idle_exit * 1000LL) {
            logmsg("idle for %d s: exiting (systemd starts it again on the next connection)", idle_exit);
            break;
        }
    }
    /* Stopped: running checks end too (their clients see the connection close). */
    for (int i = 0; i < g_nchildren; i++) kill(g_children[i].pid, SIGTERM);
    while (g_nchildren > 0) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0) break;
        forget_child(pid, st);
    }
    if (sock_path) unlink(sock_path);
    return 0;
}

#else
/* Compiled into pam_biometricd.so and the SwiftPM target as an empty unit (see the top). */
typedef int biometricd_password_helper_not_built_here;
#endif
