/*
 * What the module does in each PAM service (issue 36): a built-in table of the stacks a desktop
 * has — login screens, lock screens, elevation, the console — each with its default, and the
 * options that change it. One line in common-auth (pam-auth-update) then behaves as each of
 * these stacks needs, because they all include it: sudo asks for an act of intent first, a
 * console login shows the password prompt while the camera runs, a lock screen whose face
 * authenticator starts at the lock wants the face to arrive after it.
 *
 * A pure function of the service name and the options (no PAM, no I/O), so every entry and
 * option is tested without libpam (Tests/pam/profile_test.c).
 */
#include "pam_biometricd.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    const char *service;
    enum pamb_kind kind;
    enum pamb_intent intent;
    int parallel;
    int arrival;
    int keyring;
};

/*
 * kind       who runs PAM, and what the person did to get here
 * intent     ENTER: the password prompt comes first and an empty answer (Enter) starts the
 *            camera. For elevation that is the act of intent; for greeters and lockers whose
 *            password field answers the first prompt (SDDM, swaylock, kscreenlocker's "kde")
 *            it is the only way the typed password is not held up by the camera.
 * parallel   on a terminal, the password prompt is shown while the camera runs
 * arrival    the face must come into view after the attempt began (a lock screen whose face
 *            authenticator starts when the screen locks: #1007)
 * keyring    a root login process: hand the user's sealed login password to the stack after a
 *            face or finger success, when the user set it up (authctl keyring enable)
 */
static const struct entry table[] = {
    /* the console and terminal logins */
    { "login",                PAMB_KIND_LOGIN,     PAMB_INTENT_NONE,  1, 0, 1 },
    /* elevation: an act of intent first */
    { "sudo",                 PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    { "sudo-i",               PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    { "su",                   PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    { "su-l",                 PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    { "polkit-1",             PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    { "doas",                 PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    { "run0",                 PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0 },
    /* login screens (greeters): the camera at once, the password after */
    { "greetd",               PAMB_KIND_GREETER,   PAMB_INTENT_NONE,  0, 0, 1 },
    { "lightdm",              PAMB_KIND_GREETER,   PAMB_INTENT_NONE,  0, 0, 1 },
    { "cosmic-greeter",       PAMB_KIND_GREETER,   PAMB_INTENT_NONE,  0, 0, 1 },
    /* GDM's one conversation: the password field at once, Enter on it for the face */
    { "gdm-password",         PAMB_KIND_GREETER,   PAMB_INTENT_ENTER, 0, 0, 1 },
    /* SDDM answers the first prompt with the password typed in its field */
    { "sddm",                 PAMB_KIND_GREETER,   PAMB_INTENT_ENTER, 0, 0, 1 },
    /* a face-only service run beside the password one (a GNOME Shell extension's gdm-face) */
    { "gdm-face",             PAMB_KIND_FACE_ONLY, PAMB_INTENT_NONE,  0, 0, 1 },
    /* lock screens: the locker runs PAM as the user */
    { "kde-face",             PAMB_KIND_FACE_ONLY, PAMB_INTENT_NONE,  0, 1, 0 },
    { "kde",                  PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "swaylock",             PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "hyprlock",             PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "i3lock",               PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "xscreensaver",         PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "xsecurelock",          PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "cinnamon-screensaver", PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "mate-screensaver",     PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "xfce4-screensaver",    PAMB_KIND_LOCK,      PAMB_INTENT_ENTER, 0, 0, 0 },
    { "vlock",                PAMB_KIND_LOCK,      PAMB_INTENT_NONE,  1, 0, 0 },
    { "physlock",             PAMB_KIND_LOCK,      PAMB_INTENT_NONE,  1, 0, 0 },
    { NULL,                   PAMB_KIND_OTHER,     PAMB_INTENT_NONE,  1, 0, 0 },
};

void pamb_service_defaults(const char *service, struct pamb_behaviour *b)
{
    const struct entry *e = table;
    while (e->service != NULL && (service == NULL || strcmp(e->service, service) != 0)) e++;
    memset(b, 0, sizeof *b);
    b->kind = e->kind;
    b->intent = e->intent;
    b->parallel = e->parallel;
    b->require_arrival = e->arrival;
    b->keyring = e->keyring;
    b->timeout_s = PAMB_DEFAULT_TIMEOUT_S;
    b->known = e->service != NULL;
}

const char *pamb_kind_name(enum pamb_kind kind)
{
    switch (kind) {
    case PAMB_KIND_LOGIN: return "login";
    case PAMB_KIND_ELEVATION: return "elevation";
    case PAMB_KIND_GREETER: return "greeter";
    case PAMB_KIND_FACE_ONLY: return "face_only";
    case PAMB_KIND_LOCK: return "lock";
    case PAMB_KIND_OTHER: return "other";
    }
    return "?";
}

static int yes_no(const char *v, int *out)
{
    if (strcmp(v, "yes") == 0) { *out = 1; return 1; }
    if (strcmp(v, "no") == 0) { *out = 0; return 1; }
    return -1;
}

/* An intent word: 2-16 lowercase ASCII letters (typed at a prompt that does not echo). */
static int word_valid(const char *w)
{
    size_t n = strlen(w);
    if (n < 2 || n > PAMB_MAX_INTENT_WORD) return 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] < 'a' || w[i] > 'z') return 0;
    return 1;
}

int pamb_behaviour_option(struct pamb_behaviour *b, const char *opt)
{
    if (strncmp(opt, "intent=", 7) == 0) {
        const char *v = opt + 7;
        if (strcmp(v, "none") == 0) b->intent = PAMB_INTENT_NONE;
        else if (strcmp(v, "enter") == 0) b->intent = PAMB_INTENT_ENTER;
        else if (word_valid(v)) {
            b->intent = PAMB_INTENT_WORD;
            memcpy(b->intent_word, v, strlen(v) + 1);
        } else return -1;
        return 1;
    }
    if (strncmp(opt, "password=", 9) == 0) {
        const char *v = opt + 9;
        if (strcmp(v, "parallel") == 0) b->parallel = 1;
        else if (strcmp(v, "after") == 0) b->parallel = 0;
        else return -1;
        return 1;
    }
    if (strncmp(opt, "require_arrival=", 16) == 0) return yes_no(opt + 16, &b->require_arrival);
    if (strncmp(opt, "keyring=", 8) == 0) return yes_no(opt + 8, &b->keyring);
    if (strncmp(opt, "timeout=", 8) == 0) {
        char *end;
        const char *v = opt + 8;
        long t = strtol(v, &end, 10);
        if (end == v || *end || t < 1 || t > 300) return -1;
        b->timeout_s = t;
        return 1;
    }
    if (strncmp(opt, "other_users=", 12) == 0) {
        const char *v = opt + 12;
        if (strcmp(v, "allow") == 0) b->other_users_allowed = 1;
        else if (strcmp(v, "deny") == 0) b->other_users_allowed = 0;
        else return -1;
        return 1;
    }
    return 0;
}

/* "SERVICE:KEY=VALUE": *opt then points at KEY=VALUE when SERVICE names this service. Returns 1
 * (scoped, for this service), 0 (not scoped), -1 (scoped to another service: skip it). A service
 * name has no '=' and no '/'; KEY=VALUE options never hold ':' before their '='. */
int pamb_scoped_option(const char *service, const char **opt)
{
    const char *colon = strchr(*opt, ':'), *eq = strchr(*opt, '=');
    if (colon == NULL || (eq != NULL && eq < colon) || colon == *opt) return 0;
    size_t n = (size_t)(colon - *opt);
    if (memchr(*opt, '/', n) != NULL) return 0;
    if (service == NULL || strlen(service) != n || strncmp(service, *opt, n) != 0) return -1;
    *opt = colon + 1;
    return 1;
}
