/*
 * The module's pure parts added for the desktop (issue 36): the per-service table and its
 * options (profile.c), the password line read on a terminal (line.c), the keyring secret's
 * sealed text (keyring.c), the user.get reader and the request with require_arrival (reply.c).
 * Built and run by Tests/pam/run.sh; prints "N passed, M failed".
 */
#include "pam_biometricd.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

#define CHECK(name, cond)                                                                                              \
    do {                                                                                                               \
        if (cond) passed++;                                                                                            \
        else {                                                                                                         \
            failed++;                                                                                                  \
            printf("FAIL %s (line %d)\n", name, __LINE__);                                                            \
        }                                                                                                              \
    } while (0)

static void service(const char *name, enum pamb_kind kind, enum pamb_intent intent, int parallel, int arrival, int keyring)
{
    struct pamb_behaviour b;
    pamb_service_defaults(name, &b);
    char what[128];
    snprintf(what, sizeof what, "service %s", name ? name : "(none)");
    CHECK(what, b.kind == kind && b.intent == intent && b.parallel == parallel && b.require_arrival == arrival &&
                    b.keyring == keyring && b.timeout_s == PAMB_DEFAULT_TIMEOUT_S && !b.other_users_allowed);
}

static void table(void)
{
    /* elevation: an act of intent first; the terminal prompt side by side with the camera */
    service("sudo", PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0);
    service("sudo-i", PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0);
    service("su", PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0);
    service("su-l", PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0);
    service("polkit-1", PAMB_KIND_ELEVATION, PAMB_INTENT_ENTER, 1, 0, 0);
    /* the console: camera at once, password prompt beside it, the keyring */
    service("login", PAMB_KIND_LOGIN, PAMB_INTENT_NONE, 1, 0, 1);
    /* greeters */
    service("greetd", PAMB_KIND_GREETER, PAMB_INTENT_NONE, 0, 0, 1);
    service("lightdm", PAMB_KIND_GREETER, PAMB_INTENT_NONE, 0, 0, 1);
    service("gdm-password", PAMB_KIND_GREETER, PAMB_INTENT_ENTER, 0, 0, 1);
    service("sddm", PAMB_KIND_GREETER, PAMB_INTENT_ENTER, 0, 0, 1);
    service("gdm-face", PAMB_KIND_FACE_ONLY, PAMB_INTENT_NONE, 0, 0, 1);
    /* lock screens run as the user: no keyring; kde-face starts at the lock: arrival */
    service("kde-face", PAMB_KIND_FACE_ONLY, PAMB_INTENT_NONE, 0, 1, 0);
    service("kde", PAMB_KIND_LOCK, PAMB_INTENT_ENTER, 0, 0, 0);
    service("swaylock", PAMB_KIND_LOCK, PAMB_INTENT_ENTER, 0, 0, 0);
    service("hyprlock", PAMB_KIND_LOCK, PAMB_INTENT_ENTER, 0, 0, 0);
    service("vlock", PAMB_KIND_LOCK, PAMB_INTENT_NONE, 1, 0, 0);
    /* anything else: as before, plus the terminal prompt */
    service("sshd", PAMB_KIND_OTHER, PAMB_INTENT_NONE, 1, 0, 0);
    service(NULL, PAMB_KIND_OTHER, PAMB_INTENT_NONE, 1, 0, 0);
    service("SUDO", PAMB_KIND_OTHER, PAMB_INTENT_NONE, 1, 0, 0);
    struct pamb_behaviour b;
    pamb_service_defaults("sudo", &b);
    CHECK("table entry is known", b.known == 1);
    pamb_service_defaults("my-app", &b);
    CHECK("unknown service is not known", b.known == 0);
    CHECK("kind names", strcmp(pamb_kind_name(PAMB_KIND_ELEVATION), "elevation") == 0 &&
                            strcmp(pamb_kind_name(PAMB_KIND_FACE_ONLY), "face_only") == 0);
}

static void options(void)
{
    struct pamb_behaviour b;
    pamb_service_defaults("sudo", &b);
    CHECK("intent=none", pamb_behaviour_option(&b, "intent=none") == 1 && b.intent == PAMB_INTENT_NONE);
    CHECK("intent=enter", pamb_behaviour_option(&b, "intent=enter") == 1 && b.intent == PAMB_INTENT_ENTER);
    CHECK("intent=yes (a word)", pamb_behaviour_option(&b, "intent=yes") == 1 && b.intent == PAMB_INTENT_WORD &&
                                     strcmp(b.intent_word, "yes") == 0);
    CHECK("intent word of 16 letters", pamb_behaviour_option(&b, "intent=abcdefghijklmnop") == 1);
    CHECK("intent word of 17 letters refused", pamb_behaviour_option(&b, "intent=abcdefghijklmnopq") == -1);
    CHECK("intent word of 1 letter refused", pamb_behaviour_option(&b, "intent=y") == -1);
    CHECK("intent word with capitals refused", pamb_behaviour_option(&b, "intent=Yes") == -1);
    CHECK("intent word with a space or digit refused", pamb_behaviour_option(&b, "intent=ok1") == -1 &&
                                                           pamb_behaviour_option(&b, "intent=") == -1);
    CHECK("password=after", pamb_behaviour_option(&b, "password=after") == 1 && b.parallel == 0);
    CHECK("password=parallel", pamb_behaviour_option(&b, "password=parallel") == 1 && b.parallel == 1);
    CHECK("password=first refused", pamb_behaviour_option(&b, "password=first") == -1);
    CHECK("require_arrival=yes", pamb_behaviour_option(&b, "require_arrival=yes") == 1 && b.require_arrival == 1);
    CHECK("require_arrival=no", pamb_behaviour_option(&b, "require_arrival=no") == 1 && b.require_arrival == 0);
    CHECK("require_arrival=1 refused", pamb_behaviour_option(&b, "require_arrival=1") == -1);
    CHECK("keyring=yes", pamb_behaviour_option(&b, "keyring=yes") == 1 && b.keyring == 1);
    CHECK("keyring=maybe refused", pamb_behaviour_option(&b, "keyring=maybe") == -1);
    CHECK("timeout=30", pamb_behaviour_option(&b, "timeout=30") == 1 && b.timeout_s == 30);
    CHECK("timeout=0 and 301 refused", pamb_behaviour_option(&b, "timeout=0") == -1 &&
                                           pamb_behaviour_option(&b, "timeout=301") == -1 && b.timeout_s == 30);
    CHECK("timeout=5x refused", pamb_behaviour_option(&b, "timeout=5x") == -1);
    CHECK("other_users=allow", pamb_behaviour_option(&b, "other_users=allow") == 1 && b.other_users_allowed == 1);
    CHECK("other_users=maybe refused", pamb_behaviour_option(&b, "other_users=maybe") == -1);
    CHECK("socket= is not a behaviour", pamb_behaviour_option(&b, "socket=/x") == 0 &&
                                            pamb_behaviour_option(&b, "debug") == 0);

    const char *o = "sudo:intent=none";
    CHECK("scoped to this service", pamb_scoped_option("sudo", &o) == 1 && strcmp(o, "intent=none") == 0);
    o = "sudo:intent=none";
    CHECK("scoped to another service", pamb_scoped_option("su", &o) == -1 && strcmp(o, "sudo:intent=none") == 0);
    o = "sudo:intent=none";
    CHECK("scoped, no service known", pamb_scoped_option(NULL, &o) == -1);
    o = "intent=none";
    CHECK("not scoped", pamb_scoped_option("sudo", &o) == 0);
    o = "socket=/run/x:y";
    CHECK("a ':' after '=' is not a scope", pamb_scoped_option("sudo", &o) == 0);
    o = "camera=replay:/x";
    CHECK("camera=replay:... is not a scope", pamb_scoped_option("sudo", &o) == 0);
    o = ":intent=none";
    CHECK("empty scope is not a scope", pamb_scoped_option("sudo", &o) == 0);
    o = "polkit-1:timeout=20";
    CHECK("service with a digit and dash", pamb_scoped_option("polkit-1", &o) == 1 && strcmp(o, "timeout=20") == 0);
}

static const char *feed(struct pamb_line *l, const char *bytes)
{
    for (const char *p = bytes; *p; p++)
        if (pamb_line_feed(l, (unsigned char)*p) == PAMB_LINE_DONE) break;
    return pamb_line_text(l);
}

static void line(void)
{
    struct pamb_line l;
    const char *t;
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "hunter2\r");
    CHECK("line: plain", t && strcmp(t, "hunter2") == 0 && l.touched);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "abx\x7f" "c\n");
    CHECK("line: erase", t && strcmp(t, "abc") == 0);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "abx\x08" "c\n");
    CHECK("line: ^H erases too", t && strcmp(t, "abc") == 0);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "p\xc3\xa4\x7f" "a\n"); /* "pä", erase the two-byte character */
    CHECK("line: erase removes a whole UTF-8 character", t && strcmp(t, "pa") == 0);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "\x7f\x7f" "ok\n");
    CHECK("line: erase on empty is harmless, and counts as typing", t && strcmp(t, "ok") == 0 && l.touched);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "wrong\x15right\n");
    CHECK("line: kill", t && strcmp(t, "right") == 0);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "\x04");
    CHECK("line: end of file on an empty line", t == NULL && l.done && l.eof && !l.touched);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "a\x04" "b\n");
    CHECK("line: ^D inside a line is ignored", t && strcmp(t, "ab") == 0);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "\n");
    CHECK("line: Enter alone is an empty line, not typing", t && t[0] == '\0' && !l.touched);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    t = feed(&l, "a\x1b[Ab\x01\n");
    CHECK("line: control characters dropped", t && strcmp(t, "a[Ab") == 0);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    for (int i = 0; i < 700; i++) pamb_line_feed(&l, 'x');
    pamb_line_feed(&l, '\n');
    t = pamb_line_text(&l);
    CHECK("line: 700 bytes kept to the limit", t && strlen(t) == PAMB_MAX_PASSWORD && l.overflow);
    pamb_line_init(&l, 0x7f, 0x15, 0x04);
    CHECK("line: not done yet has no text", pamb_line_feed(&l, 'x') == PAMB_LINE_MORE && pamb_line_text(&l) == NULL);
    pamb_line_init(&l, 0, 0, 0);
    t = feed(&l, "a\x15" "b\n"); /* kill disabled: ^U is a dropped control character */
    CHECK("line: disabled kill character", t && strcmp(t, "ab") == 0);
}

static void keyring(void)
{
    char buf[PAMB_KEYRING_PAYLOAD], shadow[PAMB_MAX_SHADOW + 1], pw[PAMB_MAX_PASSWORD + 1];
    const char *hash = "$y$j9T$abcdefgh$0123456789abcdefghijklmnopqrstuvwxyzABCDE";
    int n = pamb_keyring_payload(buf, sizeof buf, "alice", 1001, hash, "p\xc3\xa4ss \"w\\rd\n");
    CHECK("keyring: payload built", n > 0 && (size_t)n == strlen(buf));
    CHECK("keyring: no password in clear", strstr(buf, "p\xc3\xa4ss") == NULL && strstr(buf, "password 70c3a4") != NULL);
    CHECK("keyring: round trip", pamb_keyring_parse(buf, (size_t)n, "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) == 0 &&
                                     strcmp(pw, "p\xc3\xa4ss \"w\\rd\n") == 0 && strcmp(shadow, hash) == 0);
    CHECK("keyring: another user's secret refused", pamb_keyring_parse(buf, (size_t)n, "bob", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0 &&
                                                        pw[0] == '\0');
    CHECK("keyring: another uid refused", pamb_keyring_parse(buf, (size_t)n, "alice", 1002, shadow, sizeof shadow, pw, sizeof pw) < 0);
    CHECK("keyring: a user named like a prefix refused", pamb_keyring_parse(buf, (size_t)n, "alic", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    CHECK("keyring: truncated refused", pamb_keyring_parse(buf, (size_t)n - 3, "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    char more[sizeof buf + 16];
    snprintf(more, sizeof more, "%sextra\n", buf);
    CHECK("keyring: trailing data refused", pamb_keyring_parse(more, strlen(more), "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    char bad[sizeof buf];
    memcpy(bad, buf, (size_t)n + 1);
    bad[n - 2] = 'g';
    CHECK("keyring: bad hex refused", pamb_keyring_parse(bad, (size_t)n, "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    memcpy(bad, buf, (size_t)n + 1);
    bad[3] = 'X';
    CHECK("keyring: wrong header refused", pamb_keyring_parse(bad, (size_t)n, "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    const char *nul = "biometricd-keyring v1\nuser alice\nuid 1001\nshadow $x\npassword 6100\n";
    CHECK("keyring: NUL in the password refused", pamb_keyring_parse(nul, strlen(nul), "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    const char *odd = "biometricd-keyring v1\nuser alice\nuid 1001\nshadow $x\npassword 616\n";
    CHECK("keyring: odd hex refused", pamb_keyring_parse(odd, strlen(odd), "alice", 1001, shadow, sizeof shadow, pw, sizeof pw) < 0);
    CHECK("keyring: empty password not sealed", pamb_keyring_payload(buf, sizeof buf, "alice", 1, hash, "") < 0);
    CHECK("keyring: shadow with a newline not sealed", pamb_keyring_payload(buf, sizeof buf, "alice", 1, "$a\nb", "x") < 0);
    CHECK("keyring: invalid user not sealed", pamb_keyring_payload(buf, sizeof buf, "al\tice", 1, hash, "x") < 0);
    char big[PAMB_MAX_PASSWORD + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK("keyring: over-long password not sealed", pamb_keyring_payload(buf, sizeof buf, "alice", 1, hash, big) < 0);
    big[PAMB_MAX_PASSWORD] = '\0';
    n = pamb_keyring_payload(buf, sizeof buf, "alice", 1, hash, big);
    CHECK("keyring: longest password fits", n > 0 && pamb_keyring_parse(buf, (size_t)n, "alice", 1, shadow, sizeof shadow, pw, sizeof pw) == 0 &&
                                                strlen(pw) == PAMB_MAX_PASSWORD);
    char path[128];
    CHECK("keyring: path", pamb_keyring_path(path, sizeof path, 1000) == 0 &&
                               strcmp(path, "/var/lib/biometricd-keyring/1000.cred") == 0);
}

static void replies(void)
{
    struct pamb_enrolment e;
    const char *ok = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"name\":\"alice\",\"uuid\":\"u\",\"created\":\"c\","
                     "\"face_templates\":2,\"finger_templates\":0,\"pin_set\":false,\"policy\":[\"face\",\"pin\"]}}";
    CHECK("user.get: face", pamb_parse_user_get(ok, strlen(ok), 3, "alice", &e) == 1 && e.face && !e.finger);
    CHECK("user.get: another name refused", pamb_parse_user_get(ok, strlen(ok), 3, "bob", &e) == -1);
    CHECK("user.get: another id refused", pamb_parse_user_get(ok, strlen(ok), 1, "alice", &e) == -1);
    const char *nopolicy = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"name\":\"alice\",\"face_templates\":2,"
                           "\"finger_templates\":4,\"policy\":[\"pin\"]}}";
    CHECK("user.get: templates outside the policy count for nothing",
          pamb_parse_user_get(nopolicy, strlen(nopolicy), 3, "alice", &e) == 1 && !e.face && !e.finger);
    const char *fing = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"name\":\"alice\",\"face_templates\":0,"
                       "\"finger_templates\":4,\"policy\":[\"face\",\"finger\"]}}";
    CHECK("user.get: fingers", pamb_parse_user_get(fing, strlen(fing), 3, "alice", &e) == 1 && !e.face && e.finger);
    const char *err = "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1002,\"message\":\"x\"}}";
    CHECK("user.get: error", pamb_parse_user_get(err, strlen(err), 3, "alice", &e) == 0);
    const char *ev = "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{}}";
    CHECK("user.get: a notification is not the answer", pamb_parse_user_get(ev, strlen(ev), 3, "alice", &e) == 2);
    const char *dup = "{\"jsonrpc\":\"2.0\",\"id\":3,\"id\":3,\"result\":{}}";
    CHECK("user.get: duplicate id refused", pamb_parse_user_get(dup, strlen(dup), 3, "alice", &e) == -1);
    const char *str = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"name\":\"alice\",\"face_templates\":\"2\","
                      "\"finger_templates\":0,\"policy\":[\"face\"]}}";
    CHECK("user.get: a count as a string refused", pamb_parse_user_get(str, strlen(str), 3, "alice", &e) == -1);
    CHECK("user.get: garbage", pamb_parse_user_get("{", 1, 3, "alice", &e) == -1);

    char req[512];
    struct pamb_request r = { 1, "alice", NULL, NULL, 10000, 0, 1 };
    int n = pamb_build_auth_request(req, sizeof req, &r);
    CHECK("request with require_arrival",
          n > 0 && strcmp(req, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"auth.authenticate\",\"params\":{\"user\":\"alice\","
                               "\"timeout_ms\":10000,\"require_arrival\":true}}\n") == 0);
    r.require_arrival = 0;
    n = pamb_build_auth_request(req, sizeof req, &r);
    CHECK("request without require_arrival", n > 0 && strstr(req, "require_arrival") == NULL);
    n = pamb_build_user_get(req, sizeof req, 3, "al\"ice");
    CHECK("user.get request", n > 0 && strcmp(req, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"user.get\",\"params\":{\"user\":"
                                                   "\"al\\\"ice\"}}\n") == 0);
}

int main(void)
{
    table();
    options();
    line();
    keyring();
    replies();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
