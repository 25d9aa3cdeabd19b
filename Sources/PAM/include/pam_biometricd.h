/*
 * pam_biometricd: the parts of the PAM module that do not touch PAM, exposed so that tests and
 * fuzzers exercise exactly the code the module runs (Tests/pam/).
 *
 * The module (pam_biometricd.c) sends one auth.authenticate request and feeds every line the
 * daemon sends back to pamb_handle_reply() until it returns a final verdict.
 */
#ifndef PAM_BIOMETRICD_H
#define PAM_BIOMETRICD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest line accepted from the daemon, without the "\n". A longer line ends the attempt. */
#define PAMB_MAX_LINE 65536
/* Most tokens in one line; more is treated as garbage. */
#define PAMB_MAX_TOKENS 4096
/* Longest PAM user name sent to the daemon, in bytes (SPEC: 1-128 printable). */
#define PAMB_MAX_USER 128
/* Longest camera= value (an id, a device path or a replay spec). */
#define PAMB_MAX_CAMERA 200

enum pamb_verdict {
    PAMB_CONTINUE = 0, /* an event (or an unrelated notification): keep reading */
    PAMB_SUCCESS = 1,  /* well-formed response, right id, result.ok === true, factor a string */
    PAMB_AUTH_ERR = 2, /* result.ok === false after a real attempt (no match, spoof, no blink) */
    PAMB_UNAVAIL = 3   /* anything else: errors, unavailability, garbage, wrong id, ... */
};

struct pamb_outcome {
    int verdict;           /* enum pamb_verdict, also the return value */
    int is_event;          /* the line was an event of our request (the daemon is alive) */
    char factor[32];       /* success: the factor that passed; failure: the one that failed */
    char reason[32];       /* data.reason of an error or of the deciding tried entry */
    long code;             /* error.code, or the deciding tried entry's code; 0 when none */
    long retry_after_s;    /* lockout: seconds until biometrics are allowed again, -1 if unknown */
    long duration_ms;      /* result.duration_ms, -1 when absent */
    char message[128];     /* text for the user (PAM_TEXT_INFO), "" when none; UTF-8, fixed texts */
};

/* Classifies one line (without the "\n") received while waiting for the answer to request
 * `expect_id`. When expect_user is not NULL, a success whose result.user is present must name
 * that user. Never reads outside line[0..len). Returns out->verdict. */
int pamb_handle_reply(const char *line, size_t len, long expect_id, const char *expect_user,
                      struct pamb_outcome *out);

/* 1 when the PAM user name may be sent: 1..PAMB_MAX_USER bytes of UTF-8 without control
 * characters (C0, DEL, C1). */
int pamb_user_valid(const char *user);

/* 1 when `factors` is a comma list of distinct "face"/"finger" (e.g. "face,finger"). */
int pamb_factors_valid(const char *factors);

/* 1 when a camera id may be sent: 1..PAMB_MAX_CAMERA printable ASCII characters, no space. */
int pamb_camera_valid(const char *camera);

/* Writes the request line (with its "\n") into buf. factors and camera may be NULL (omitted).
 * Returns the length, or -1 when an argument is invalid or buf is too small. */
int pamb_build_request(char *buf, size_t cap, long id, const char *user, const char *factors,
                       const char *camera, long timeout_ms);

/* Writes the auth.lockout.clear request for `user` (with its "\n"): what the module sends after a
 * password login (setcred/account phase) to clear the user's biometric lockout. Returns the
 * length, or -1 when the user is invalid or buf is too small. */
int pamb_build_clear_request(char *buf, size_t cap, long id, const char *user);

/* ---- Whom the module answers for (scope.c) ---------------------------------------------- */

/* What the module knows of the attempt, from the kernel, PAM's items and logind. */
struct pamb_scope_facts {
    unsigned ruid;             /* getuid(): who started the program (su and sudo keep it) */
    int target_known;          /* the PAM user has a passwd entry */
    unsigned target_uid;
    int ruser_known;           /* PAM_RUSER names an account */
    unsigned ruser_uid;
    const char *rhost;         /* PAM_RHOST, or NULL */
    const char *tty;           /* PAM_TTY, or NULL */
    int env_ssh;               /* SSH_CONNECTION/SSH_CLIENT set: a hint only (unsetting it proves nothing) */
    int logind;                /* the system runs logind (sd_booted) */
    int has_session;           /* the calling process belongs to a logind session */
    int session_remote;        /* that session is remote (logind) */
    int session_active;        /* it is in the foreground of its seat */
    const char *session_seat;  /* its seat, or NULL */
    unsigned session_uid;      /* its owner */
    const char *seat;          /* the camera's seat (seat= option) */
    int other_users_allowed;   /* other_users=allow */
};

enum pamb_scope {
    PAMB_SCOPE_RUN = 0,          /* the person at the seat asks for their own account */
    PAMB_SCOPE_RUN_OTHER_USER,   /* another user's attempt, allowed by other_users=allow: never counted */
    PAMB_SCOPE_REMOTE,           /* a remote session: PAM_IGNORE */
    PAMB_SCOPE_OTHER_USER,       /* another user's attempt (su bob by alice): PAM_IGNORE */
    PAMB_SCOPE_NOT_AT_SEAT       /* not a local, active session on the camera's seat: PAM_IGNORE */
};

enum pamb_scope pamb_decide_scope(const struct pamb_scope_facts *f);
const char *pamb_scope_name(enum pamb_scope scope);
/* 1 for a local console terminal: "ttyN", "/dev/ttyN", or an X display ":N[.M]". */
int pamb_tty_is_console(const char *tty);
/* Log-safe copy: [A-Za-z0-9._+@-] as they are, every other byte as \xNN; always terminated. */
void pamb_log_escape(const char *in, char *out, size_t cap);

/* auth.authenticate as pamb_build_request, with "other_user":true (another user's attempt that
 * the administrator allowed: the daemon accepts it from root only and never counts it). */
int pamb_build_request_ex(char *buf, size_t cap, long id, const char *user, const char *factors,
                          const char *camera, long timeout_ms, int other_user);

#ifdef __cplusplus
}
#endif

#endif
