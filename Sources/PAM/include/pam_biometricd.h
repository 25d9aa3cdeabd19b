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
    int seat_shows_greeter;    /* logind: the camera's seat's active session is a greeter's (a login screen is up) */
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


/* auth.authenticate with every option the module sends. */
struct pamb_request {
    long id;
    const char *user;
    const char *factors;    /* NULL: the user's policy */
    const char *camera;     /* NULL: the daemon's choice */
    long timeout_ms;
    int other_user;         /* another user's attempt the administrator allowed (never counted) */
    int require_arrival;    /* a face already in view at the start does not count (lock screens) */
};
int pamb_build_auth_request(char *buf, size_t cap, const struct pamb_request *r);

/* user.get for `user` (what the module asks before an intent prompt: is there anything to use?). */
int pamb_build_user_get(char *buf, size_t cap, long id, const char *user);

/* What user.get said. */
struct pamb_enrolment {
    int face;    /* face templates, and face in the policy */
    int finger;  /* finger templates, and finger in the policy */
};
/* Classifies the answer to user.get id `expect_id` for `user`: 1 a result (e filled), 0 an error
 * (not enrolled, refused), -1 garbage; PAMB_CONTINUE-like lines (events) give 2: keep reading. */
int pamb_parse_user_get(const char *line, size_t len, long expect_id, const char *user, struct pamb_enrolment *e);

/* ---- What the module does per PAM service (profile.c) ----------------------------------- */

#define PAMB_DEFAULT_TIMEOUT_S 10
#define PAMB_MAX_INTENT_WORD 16
/* Longest password the module reads itself (PAM_MAX_RESP_SIZE is 512). */
#define PAMB_MAX_PASSWORD 511

enum pamb_kind {
    PAMB_KIND_OTHER = 0,
    PAMB_KIND_LOGIN,      /* a console login (login): root, on a terminal */
    PAMB_KIND_ELEVATION,  /* sudo, su, polkit-1: the user asks for more rights */
    PAMB_KIND_GREETER,    /* a login screen: root, one conversation */
    PAMB_KIND_FACE_ONLY,  /* a face-only service run beside the password one (gdm-face, kde-face) */
    PAMB_KIND_LOCK        /* a screen locker, run as the user */
};
enum pamb_intent { PAMB_INTENT_NONE = 0, PAMB_INTENT_ENTER, PAMB_INTENT_WORD };

struct pamb_behaviour {
    enum pamb_kind kind;
    enum pamb_intent intent;
    char intent_word[PAMB_MAX_INTENT_WORD + 1];
    int parallel;            /* on a terminal: the password prompt while the camera runs */
    int require_arrival;     /* the face must come into view after the attempt began */
    int keyring;             /* hand the sealed login password on after a success (root logins) */
    long timeout_s;
    int other_users_allowed;
    int known;               /* the service is in the table */
};

/* The built-in defaults of `service` (NULL or unknown: "other"). */
void pamb_service_defaults(const char *service, struct pamb_behaviour *b);
const char *pamb_kind_name(enum pamb_kind kind);
/* Applies a behaviour option (intent=, password=, require_arrival=, keyring=, timeout=,
 * other_users=). 1 applied, 0 not one of these, -1 an invalid value. */
int pamb_behaviour_option(struct pamb_behaviour *b, const char *opt);
/* "SERVICE:KEY=VALUE": 1 (for this service; *opt moved to KEY=VALUE), 0 (not scoped), -1 (for
 * another service). */
int pamb_scoped_option(const char *service, const char **opt);

/* ---- The password line read on a terminal (line.c) --------------------------------------- */

struct pamb_line {
    char buf[PAMB_MAX_PASSWORD + 1];
    size_t len;
    int touched;     /* a key other than Enter or end of file was pressed: the person is typing */
    int done;
    int eof;         /* end of file on an empty line */
    int overflow;    /* more than PAMB_MAX_PASSWORD bytes were typed (the rest dropped) */
    unsigned char erase, kill, eof_char;
};
enum pamb_line_event { PAMB_LINE_MORE = 0, PAMB_LINE_DONE = 1 };
void pamb_line_init(struct pamb_line *l, unsigned char erase, unsigned char kill, unsigned char eof);
enum pamb_line_event pamb_line_feed(struct pamb_line *l, unsigned char c);
const char *pamb_line_text(const struct pamb_line *l);

/* ---- The keyring secret (keyring.c) ------------------------------------------------------- */

#define PAMB_KEYRING_DIR "/var/lib/biometricd-keyring"
#define PAMB_KEYRING_NONE 1       /* pamb_keyring_unseal: the user has no sealed secret */
#define PAMB_MAX_SHADOW 255
#define PAMB_KEYRING_PAYLOAD 2048 /* room for the sealed text */

int pamb_keyring_path(char *buf, size_t cap, unsigned uid);
/* The sealed text: header, user, uid, the shadow hash at sealing time, the password in hex. */
int pamb_keyring_payload(char *buf, size_t cap, const char *user, unsigned uid, const char *shadow_hash,
                         const char *password);
/* Strict reader of that text for `user`/`uid`: 0 (shadow and password filled), -1. */
int pamb_keyring_parse(const char *buf, size_t len, const char *user, unsigned uid, char *shadow, size_t scap,
                       char *password, size_t pcap);
/* The account's password hash from /etc/shadow (root only): 0, or -1. */
int pamb_shadow_hash(const char *user, char *buf, size_t cap);
/* systemd-creds decrypt of UID.cred into out: 0, PAMB_KEYRING_NONE (no file), -1 (why says). */
int pamb_keyring_unseal(unsigned uid, char *out, size_t cap, size_t *len, long long deadline_ms, char *why, size_t wcap);
/* systemd-creds encrypt --with-key=host+tpm2 of payload into UID.cred (atomically): 0, -1. */
int pamb_keyring_seal(unsigned uid, const char *payload, size_t plen, long long deadline_ms, char *why, size_t wcap);
/* Removes UID.cred: 1 removed, 0 there was none, -1 error. */
int pamb_keyring_remove(unsigned uid);

#ifdef __cplusplus
}
#endif

#endif
