/*
 * Every branch of pamb_decide_scope (Sources/PAM/scope.c): whom the module answers for, from the
 * facts it gathers (real uid, PAM_RUSER, PAM_RHOST, PAM_TTY, logind). Built and run by
 * Tests/pam/run.sh; prints "N passed, M failed".
 */
#include "pam_biometricd.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

static void expect(const char *name, const struct pamb_scope_facts *f, enum pamb_scope want)
{
    enum pamb_scope got = pamb_decide_scope(f);
    if (got == want) passed++;
    else {
        failed++;
        printf("FAIL %s: got %s, want %s\n", name, pamb_scope_name(got), pamb_scope_name(want));
    }
}

/* alice (1000) at seat0's console, in her own local, active graphical session. */
static struct pamb_scope_facts alice_at_seat(void)
{
    struct pamb_scope_facts f;
    memset(&f, 0, sizeof f);
    f.ruid = 1000;
    f.target_known = 1;
    f.target_uid = 1000;
    f.tty = "/dev/pts/0";
    f.logind = 1;
    f.has_session = 1;
    f.session_active = 1;
    f.session_seat = "seat0";
    f.session_uid = 1000;
    f.seat = "seat0";
    return f;
}

int main(void)
{
    struct pamb_scope_facts f;

    f = alice_at_seat();
    expect("sudo by alice in her local session", &f, PAMB_SCOPE_RUN);

    /* Remote: over ssh, whatever the environment says. */
    f = alice_at_seat();
    f.session_remote = 1;
    expect("sudo in an ssh session (logind: remote), SSH_CONNECTION unset", &f, PAMB_SCOPE_REMOTE);
    f = alice_at_seat();
    f.rhost = "192.0.2.7";
    expect("PAM_RHOST set", &f, PAMB_SCOPE_REMOTE);
    f.rhost = "localhost";
    expect("PAM_RHOST localhost is local", &f, PAMB_SCOPE_RUN);
    f = alice_at_seat();
    f.tty = "ssh";
    expect("PAM_TTY ssh (sshd without a pty)", &f, PAMB_SCOPE_REMOTE);
    f = alice_at_seat();
    f.env_ssh = 1;
    expect("SSH_CONNECTION set (a hint that only makes it stricter)", &f, PAMB_SCOPE_REMOTE);

    /* Another user's attempt. */
    f = alice_at_seat();
    f.target_uid = 1001;
    expect("su bob by alice", &f, PAMB_SCOPE_OTHER_USER);
    f.other_users_allowed = 1;
    expect("su bob by alice, other_users=allow", &f, PAMB_SCOPE_RUN_OTHER_USER);
    f = alice_at_seat();
    f.target_known = 0;
    expect("an account with no passwd entry is not alice's", &f, PAMB_SCOPE_OTHER_USER);
    f = alice_at_seat();
    f.ruid = 1002;
    f.target_uid = 1000;
    f.has_session = 0;
    expect("mallory from cron: su - alice", &f, PAMB_SCOPE_OTHER_USER);
    f.other_users_allowed = 1;
    expect("mallory from cron with other_users=allow: still not at the seat", &f, PAMB_SCOPE_NOT_AT_SEAT);

    /* The requester's own session must be local, active, on the camera's seat, and theirs. */
    f = alice_at_seat();
    f.has_session = 0;
    expect("alice outside any session (a systemd --user service)", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.session_active = 0;
    expect("alice's session in the background (another user's session is in front)", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.session_seat = NULL;
    expect("a session on no seat", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.session_seat = "seat1";
    expect("a session on another seat", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f.seat = "seat1";
    expect("a session on the camera's seat (seat=seat1)", &f, PAMB_SCOPE_RUN);
    f = alice_at_seat();
    f.session_uid = 1001;
    expect("alice's process inside bob's session", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.logind = 0;
    f.has_session = 0;
    expect("no logind: only PAM_RHOST/PAM_TTY known", &f, PAMB_SCOPE_RUN);

    /* Root: a login or greeter process. */
    f = alice_at_seat();
    f.ruid = 0;
    f.has_session = 0;
    f.tty = "tty2";
    expect("login on tty2", &f, PAMB_SCOPE_RUN);
    f.tty = "/dev/tty1";
    expect("login on /dev/tty1", &f, PAMB_SCOPE_RUN);
    f.tty = ":0";
    expect("a display manager on :0", &f, PAMB_SCOPE_RUN);
    f.tty = "/dev/pts/3";
    expect("root without a session on a pty", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f.tty = NULL;
    expect("root without a session or a terminal (cron)", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f.tty = "tty1";
    f.seat = "seat1";
    expect("a virtual terminal is seat0's, not seat1's", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.ruid = 0;
    f.session_uid = 115;
    expect("a greeter in its own session on seat0", &f, PAMB_SCOPE_RUN);
    f.session_seat = "seat1";
    expect("a greeter on another seat", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.ruid = 0;
    f.ruser_known = 1;
    f.ruser_uid = 1002;
    expect("root acting for mallory (PAM_RUSER) on alice's account", &f, PAMB_SCOPE_OTHER_USER);
    f.ruser_uid = 1000;
    expect("PAM_RUSER is the target", &f, PAMB_SCOPE_RUN);
    f.ruser_uid = 0;
    expect("PAM_RUSER root", &f, PAMB_SCOPE_RUN);
    f = alice_at_seat();
    f.ruid = 0;
    f.logind = 0;
    f.has_session = 0;
    f.tty = NULL;
    expect("root without logind (a container): PAM_RHOST and PAM_TTY only", &f, PAMB_SCOPE_RUN);

    /* Console terminals. */
    const char *consoles[] = { "tty1", "/dev/tty12", ":0", ":1.0" };
    const char *others[] = { "", "tty", "ttyS0", "/dev/pts/1", ":", ":x", "pts/0", "ssh", ":0.x" };
    for (size_t i = 0; i < sizeof consoles / sizeof *consoles; i++) {
        if (pamb_tty_is_console(consoles[i])) passed++; else { failed++; printf("FAIL console %s\n", consoles[i]); }
    }
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        if (!pamb_tty_is_console(others[i])) passed++; else { failed++; printf("FAIL not a console %s\n", others[i]); }
    }

    /* Log escaping. */
    char out[64];
    pamb_log_escape("bob outcome=success", out, sizeof out);
    if (strcmp(out, "bob\\x20outcome\\x3dsuccess") == 0) passed++; else { failed++; printf("FAIL escape: %s\n", out); }
    pamb_log_escape("ev\xe2\x80\xaeil", out, sizeof out);
    if (strcmp(out, "ev\\xe2\\x80\\xaeil") == 0) passed++; else { failed++; printf("FAIL escape RLO: %s\n", out); }
    pamb_log_escape("a.b_c-d+e@f", out, sizeof out);
    if (strcmp(out, "a.b_c-d+e@f") == 0) passed++; else { failed++; printf("FAIL escape plain: %s\n", out); }
    pamb_log_escape("xxxxxxxxxx", out, 5);
    if (strcmp(out, "xxxx") == 0) passed++; else { failed++; printf("FAIL escape cap: %s\n", out); }

    /* issue 36: a greeter's worker that sets no PAM_TTY before authenticating (greetd) */
    f = alice_at_seat();
    f.ruid = 0;
    f.has_session = 0;
    f.tty = NULL;
    expect("root, no session, no terminal: not at the seat", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f.seat_shows_greeter = 1;
    expect("root, no session, no terminal, the seat shows its login screen (greetd's worker)", &f, PAMB_SCOPE_RUN);
    f.rhost = "192.0.2.7";
    expect("... but a remote host is still remote", &f, PAMB_SCOPE_REMOTE);
    f.rhost = NULL;
    f.ruser_known = 1;
    f.ruser_uid = 1002;
    expect("... and another user's attempt still another's", &f, PAMB_SCOPE_OTHER_USER);
    f = alice_at_seat();
    f.seat_shows_greeter = 1;
    f.session_active = 0;
    expect("a greeter on the seat does not put a background user session at it", &f, PAMB_SCOPE_NOT_AT_SEAT);
    f = alice_at_seat();
    f.ruid = 0;
    f.has_session = 1;
    f.session_seat = "seat1";
    f.seat_shows_greeter = 1;
    expect("root in a session on another seat: not at this one", &f, PAMB_SCOPE_NOT_AT_SEAT);

    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
