/*
 * Whom the module answers for (issue 33, item 7): the person at the seat, never a remote session,
 * never another user's attempt unless the administrator allows it. A pure function of facts the
 * module gathers from the kernel (the real uid), PAM's items and logind — never from environment
 * variables, which the caller controls — so every branch is tested without PAM or logind
 * (Tests/pam/scope_test.c).
 */
#include "pam_biometricd.h"

#include <string.h>

static int is_digits(const char *s)
{
    if (*s == '\0') return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* A local console: a virtual terminal ("tty1", "/dev/tty1") or an X display (":0", ":1.0").
 * Virtual terminals and local displays belong to seat0. */
int pamb_tty_is_console(const char *tty)
{
    if (tty == NULL) return 0;
    if (strncmp(tty, "/dev/", 5) == 0) tty += 5;
    if (strncmp(tty, "tty", 3) == 0) return is_digits(tty + 3);
    if (tty[0] == ':' && tty[1] >= '0' && tty[1] <= '9') {
        const char *p = tty + 1;
        while (*p >= '0' && *p <= '9') p++;
        if (*p == '\0') return 1;
        if (*p == '.') return is_digits(p + 1);
    }
    return 0;
}

/* PAM_RHOST names another machine: anything but empty or the loopback. */
static int rhost_is_remote(const char *rhost)
{
    if (rhost == NULL || rhost[0] == '\0') return 0;
    return strcmp(rhost, "localhost") != 0 && strcmp(rhost, "127.0.0.1") != 0 && strcmp(rhost, "::1") != 0;
}

enum pamb_scope pamb_decide_scope(const struct pamb_scope_facts *f)
{
    /* A remote session never uses the camera: PAM_RHOST, sshd's PAM_TTY "ssh", or logind's own
     * word on the caller's session. SSH_CONNECTION is only a further hint: unsetting it proves
     * nothing. */
    if (rhost_is_remote(f->rhost) || (f->tty != NULL && strncmp(f->tty, "ssh", 3) == 0) ||
        (f->has_session && f->session_remote) || f->env_ssh)
        return PAMB_SCOPE_REMOTE;

    if (f->ruid == 0) {
        /* A login or greeter process (login, gdm's worker, greetd): its session, if it already
         * has one, must be on the camera's seat; without one, its terminal must be a local
         * console (virtual terminals and local displays are seat0's). */
        if (f->ruser_known && f->ruser_uid != 0 && (!f->target_known || f->ruser_uid != f->target_uid))
            return f->other_users_allowed ? PAMB_SCOPE_RUN_OTHER_USER : PAMB_SCOPE_OTHER_USER;
        if (!f->logind) return PAMB_SCOPE_RUN; /* no logind: PAM_RHOST and PAM_TTY are all we know */
        if (f->has_session)
            return f->session_seat != NULL && strcmp(f->session_seat, f->seat) == 0 ? PAMB_SCOPE_RUN : PAMB_SCOPE_NOT_AT_SEAT;
        if (pamb_tty_is_console(f->tty) && strcmp(f->seat, "seat0") == 0) return PAMB_SCOPE_RUN;
        /* A greeter's worker that sets no PAM_TTY before authenticating (greetd sets it only for
         * the session): the seat shows its login screen now (logind: its active session is a
         * greeter's), so the person at it is the one logging in. */
        return f->seat_shows_greeter ? PAMB_SCOPE_RUN : PAMB_SCOPE_NOT_AT_SEAT;
    }

    /* A process of another user asking for this account (su bob by alice, pkexec for another
     * admin identity): not by default. */
    int other = !f->target_known || f->ruid != f->target_uid;
    if (other && !f->other_users_allowed) return PAMB_SCOPE_OTHER_USER;
    if (!f->logind) return other ? PAMB_SCOPE_RUN_OTHER_USER : PAMB_SCOPE_RUN;
    /* The requester's logind session must be local, active (in the foreground of its seat), on
     * the camera's seat, and the requester's own: the person at the seat. */
    if (!f->has_session || !f->session_active || f->session_seat == NULL || strcmp(f->session_seat, f->seat) != 0 ||
        f->session_uid != f->ruid)
        return PAMB_SCOPE_NOT_AT_SEAT;
    return other ? PAMB_SCOPE_RUN_OTHER_USER : PAMB_SCOPE_RUN;
}

const char *pamb_scope_name(enum pamb_scope scope)
{
    switch (scope) {
    case PAMB_SCOPE_RUN: return "run";
    case PAMB_SCOPE_RUN_OTHER_USER: return "run_other_user";
    case PAMB_SCOPE_REMOTE: return "remote_session";
    case PAMB_SCOPE_OTHER_USER: return "other_user";
    case PAMB_SCOPE_NOT_AT_SEAT: return "not_at_seat";
    }
    return "?";
}

/* Copies `in` into out (cap bytes, always terminated): letters, digits and . _ - + @ as they
 * are, every other byte as \xNN. A user named "bob outcome=success" cannot forge a field of the
 * log line, nor can one holding U+202E reorder it. */
void pamb_log_escape(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (cap == 0) return;
    for (const unsigned char *p = (const unsigned char *)(in ? in : ""); *p; p++) {
        unsigned char c = *p;
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == '-' || c == '+' || c == '@';
        size_t need = plain ? 1 : 4;
        if (n + need >= cap) break;
        if (plain) {
            out[n++] = (char)c;
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
}
