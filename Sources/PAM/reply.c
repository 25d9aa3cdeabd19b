/* pam_biometricd: request building and reply classification, no PAM calls (see
 * include/pam_biometricd.h). The one rule that matters: PAMB_SUCCESS only for a well-formed
 * JSON-RPC 2.0 response with our id whose result.ok is the boolean true and result.factor a
 * string. */
#include "pam_biometricd.h"
#include "bjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set(struct pamb_outcome *out, int verdict)
{
    out->verdict = verdict;
    return verdict;
}

static void say(struct pamb_outcome *out, const char *text)
{
    snprintf(out->message, sizeof out->message, "%s", text);
}

/* Copies string token i into buf when it is 1..cap-1 characters of [A-Za-z0-9_.-]. */
static int copy_ident(const struct bjson_doc *d, int i, char *buf, size_t cap)
{
    char tmp[64];
    int n = bjson_str(d, i, tmp, sizeof tmp);
    if (n <= 0 || (size_t)n >= cap) return -1;
    for (int k = 0; k < n; k++) {
        char c = tmp[k];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return -1;
    }
    memcpy(buf, tmp, (size_t)n + 1);
    return 0;
}

static long get_long(const struct bjson_doc *d, int obj, const char *key, long dflt)
{
    long long v;
    if (bjson_int(d, bjson_get(d, obj, key), &v) < 0) return dflt;
    return (long)v;
}

static void lockout_message(struct pamb_outcome *out)
{
    if (out->retry_after_s >= 0)
        snprintf(out->message, sizeof out->message,
                 "Too many attempts \xe2\x80\x94 use your password, retry in %ld s", out->retry_after_s);
    else
        say(out, "Too many attempts \xe2\x80\x94 use your password until you enter your PIN");
}

/* Short guidance for the user from feedback codes (SPEC section 5). Fixed texts only: nothing
 * the daemon sends is shown verbatim. */
struct cue { const char *code; const char *text; int blocking; };
static const struct cue face_cues[] = {
    { "no_face", "Look at the camera", 1 },
    { "multiple_faces", "Only one face, please", 1 },
    { "move_closer", "Move closer", 1 },
    { "move_back", "Move back", 1 },
    { "too_dark", "Too dark", 1 },
    { "too_bright", "Too bright", 1 },
    { "center_face", "Centre your face", 1 },
    { "blurry", "Keep still", 0 },
    { "face_forward", "Look at the camera", 0 },
    { "turn_left", "Look at the camera", 0 },
    { "turn_right", "Look at the camera", 0 },
    { "look_up", "Look at the camera", 0 },
    { "look_down", "Look at the camera", 0 },
    { NULL, NULL, 0 }
};
static const struct cue finger_cues[] = {
    { "no_fingers", "Hold your fingers in front of the camera", 1 },
    { "too_close", "Move your hand back", 1 },
    { "too_far", "Move your hand closer", 1 },
    { "optimal", "Hold still", 1 },
    { NULL, NULL, 0 }
};

static const struct cue *find_cue(const struct cue *table, const struct bjson_doc *d, int i)
{
    for (const struct cue *c = table; c->code; c++)
        if (bjson_str_eq(d, i, c->code)) return c;
    return NULL;
}

/* First cue of `feedback` (a string or an array of strings) with blocking == want (-1: any). */
static const struct cue *pick_cue(const struct cue *table, const struct bjson_doc *d, int fb, int want)
{
    if (bjson_type(d, fb) == BJSON_STRING) {
        const struct cue *c = find_cue(table, d, fb);
        return c && (want < 0 || c->blocking == want) ? c : NULL;
    }
    if (bjson_type(d, fb) != BJSON_ARRAY) return NULL;
    for (unsigned int k = 0; k < d->tok[fb].count && k < 32; k++) {
        const struct cue *c = find_cue(table, d, bjson_at(d, fb, k));
        if (c && (want < 0 || c->blocking == want)) return c;
    }
    return NULL;
}

static int handle_event(const struct bjson_doc *d, int root, long expect_id, struct pamb_outcome *out)
{
    if (!bjson_str_eq(d, bjson_get(d, root, "method"), "event")) return set(out, PAMB_CONTINUE);
    int params = bjson_get(d, root, "params");
    if (bjson_type(d, params) != BJSON_OBJECT) return set(out, PAMB_CONTINUE);
    long long req;
    if (bjson_int(d, bjson_get(d, params, "request"), &req) < 0 || req != expect_id)
        return set(out, PAMB_CONTINUE); /* someone else's, or nobody's */
    out->is_event = 1;
    int type = bjson_get(d, params, "type");
    int fb = bjson_get(d, params, "feedback");
    const struct cue *c = NULL;
    if (bjson_str_eq(d, type, "face.frame")) {
        c = pick_cue(face_cues, d, fb, 1);
        if (!c) {
            int action = bjson_get(d, params, "liveness_action");
            if (bjson_str_eq(d, action, "keep_still")) say(out, "Keep still");
            else if (bjson_str_eq(d, action, "blink")) say(out, "Blink now");
            else c = pick_cue(face_cues, d, fb, 0);
        }
    } else if (bjson_str_eq(d, type, "finger.frame")) {
        c = pick_cue(finger_cues, d, fb, -1);
    } else if (bjson_str_eq(d, type, "auth.factor")) {
        int f = bjson_get(d, params, "factor");
        if (bjson_str_eq(d, f, "face")) say(out, "Look at the camera");
        else if (bjson_str_eq(d, f, "finger")) say(out, "Hold your fingers in front of the camera");
    }
    if (c) say(out, c->text);
    return set(out, PAMB_CONTINUE);
}

static int handle_error(const struct bjson_doc *d, int err, struct pamb_outcome *out)
{
    if (bjson_type(d, err) != BJSON_OBJECT) return set(out, PAMB_UNAVAIL);
    out->code = get_long(d, err, "code", 0);
    int data = bjson_get(d, err, "data");
    if (bjson_type(d, data) == BJSON_OBJECT) {
        copy_ident(d, bjson_get(d, data, "reason"), out->reason, sizeof out->reason);
        long r = get_long(d, data, "retry_after_s", -1);
        out->retry_after_s = r >= 0 ? r : -1;
    }
    if (out->code == 5001 || strcmp(out->reason, "locked_out") == 0) lockout_message(out);
    return set(out, PAMB_UNAVAIL);
}

static int is_real_attempt(const char *reason, long code)
{
    return strcmp(reason, "no_match") == 0 || strcmp(reason, "spoof_detected") == 0 ||
           strcmp(reason, "blink_timeout") == 0 || code == 3003 || code == 3004;
}

/* result.ok === false: a real failed attempt, or only unavailability. */
static int handle_failure(const struct bjson_doc *d, int result, struct pamb_outcome *out)
{
    int tried = bjson_get(d, result, "tried");
    int locked = 0;
    unsigned int count = bjson_type(d, tried) == BJSON_ARRAY ? d->tok[tried].count : 0;
    for (unsigned int k = 0; k < count && k < 64; k++) {
        int e = bjson_at(d, tried, k);
        char reason[32] = "", factor[32] = "";
        if (bjson_type(d, e) != BJSON_OBJECT) continue;
        copy_ident(d, bjson_get(d, e, "reason"), reason, sizeof reason);
        copy_ident(d, bjson_get(d, e, "factor"), factor, sizeof factor);
        long code = get_long(d, e, "code", 0);
        if (is_real_attempt(reason, code)) {
            memcpy(out->reason, reason, sizeof reason);
            memcpy(out->factor, factor, sizeof factor);
            out->code = code;
            if (strcmp(factor, "finger") == 0) say(out, "Fingerprint not recognised");
            else if (strcmp(factor, "face") == 0) say(out, "Face not recognised");
            else say(out, "Not recognised");
            return set(out, PAMB_AUTH_ERR);
        }
        if (k == 0 || code == 5001 || strcmp(reason, "locked_out") == 0) {
            memcpy(out->reason, reason, sizeof reason);
            memcpy(out->factor, factor, sizeof factor);
            out->code = code;
        }
        if (code == 5001 || strcmp(reason, "locked_out") == 0) {
            long r = get_long(d, e, "retry_after_s", -1);
            out->retry_after_s = r >= 0 ? r : -1;
            locked = 1;
        }
    }
    if (locked) lockout_message(out);
    return set(out, PAMB_UNAVAIL);
}

int pamb_handle_reply(const char *line, size_t len, long expect_id, const char *expect_user,
                      struct pamb_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->retry_after_s = -1;
    out->duration_ms = -1;
    out->verdict = PAMB_UNAVAIL;
    if (line == NULL || len > PAMB_MAX_LINE) return PAMB_UNAVAIL;

    struct bjson_tok *toks = malloc(PAMB_MAX_TOKENS * sizeof *toks);
    if (toks == NULL) return PAMB_UNAVAIL;
    struct bjson_doc doc;
    const struct bjson_doc *d = &doc;
    int v = PAMB_UNAVAIL;
    if (bjson_parse(&doc, line, len, toks, PAMB_MAX_TOKENS) < 0 || bjson_type(d, 0) != BJSON_OBJECT)
        goto done;
    if (!bjson_str_eq(d, bjson_get(d, 0, "jsonrpc"), "2.0")) goto done;
    int method = bjson_get(d, 0, "method"), id = bjson_get(d, 0, "id");
    if (method == -2 || id == -2) goto done;
    if (method >= 0) {
        if (id == -1) v = handle_event(d, 0, expect_id, out);
        goto done; /* a request from the daemon is not an answer */
    }
    long long got;
    if (bjson_int(d, id, &got) < 0 || got != expect_id) goto done;
    int result = bjson_get(d, 0, "result"), error = bjson_get(d, 0, "error");
    if (result == -2 || error == -2 || (result >= 0) == (error >= 0)) goto done;
    if (error >= 0) {
        v = handle_error(d, error, out);
        goto done;
    }
    if (bjson_type(d, result) != BJSON_OBJECT) goto done;
    out->duration_ms = get_long(d, result, "duration_ms", -1);
    int ok = bjson_get(d, result, "ok");
    if (bjson_type(d, ok) == BJSON_FALSE) {
        v = handle_failure(d, result, out);
    } else if (bjson_type(d, ok) == BJSON_TRUE) {
        char factor[sizeof out->factor];
        if (copy_ident(d, bjson_get(d, result, "factor"), factor, sizeof factor) < 0) goto done;
        int user = bjson_get(d, result, "user");
        if (user == -2) goto done;
        if (expect_user != NULL && user >= 0 && !bjson_str_eq(d, user, expect_user)) goto done;
        memcpy(out->factor, factor, sizeof factor);
        v = PAMB_SUCCESS;
    }
done:
    free(toks);
    return set(out, v);
}

/* ---- request ---- */

static int valid_utf8_text(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !bjson_utf8_valid(s, n)) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) return 0;
        if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] <= 0x9f) return 0; /* C1 */
    }
    return 1;
}

int pamb_user_valid(const char *user)
{
    return user != NULL && valid_utf8_text(user, PAMB_MAX_USER);
}

int pamb_camera_valid(const char *camera)
{
    size_t n = camera ? strlen(camera) : 0;
    if (n == 0 || n > PAMB_MAX_CAMERA) return 0;
    for (size_t i = 0; i < n; i++)
        if (camera[i] < 0x21 || camera[i] > 0x7e) return 0;
    return 1;
}

int pamb_factors_valid(const char *factors)
{
    int face = 0, finger = 0;
    const char *p = factors;
    if (p == NULL || *p == '\0') return 0;
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 4 && strncmp(p, "face", 4) == 0 && !face) face = 1;
        else if (n == 6 && strncmp(p, "finger", 6) == 0 && !finger) finger = 1;
        else return 0;
        if (p[n] == '\0') return 1;
        p += n + 1;
    }
}

struct sbuf { char *p; size_t cap, len; int bad; };

static void put(struct sbuf *b, const char *s, size_t n)
{
    if (b->bad || n >= b->cap - b->len) { b->bad = 1; return; }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(struct sbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_json_string(struct sbuf *b, const char *s)
{
    put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; put(b, esc, 2); }
        else if (c < 0x20 || c == 0x7f) { snprintf(esc, sizeof esc, "\\u%04x", c); put(b, esc, 6); }
        else put(b, (const char *)&c, 1);
    }
    put(b, "\"", 1);
}

int pamb_build_request(char *buf, size_t cap, long id, const char *user, const char *factors,
                       const char *camera, long timeout_ms)
{
    return pamb_build_request_ex(buf, cap, id, user, factors, camera, timeout_ms, 0);
}

int pamb_build_request_ex(char *buf, size_t cap, long id, const char *user, const char *factors,
                          const char *camera, long timeout_ms, int other_user)
{
    struct pamb_request r = { id, user, factors, camera, timeout_ms, other_user, 0 };
    return pamb_build_auth_request(buf, cap, &r);
}

int pamb_build_auth_request(char *buf, size_t cap, const struct pamb_request *r)
{
    struct sbuf b = { buf, cap, 0, 0 };
    char num[32];
    if (buf == NULL || cap == 0 || r == NULL || !pamb_user_valid(r->user) || r->timeout_ms <= 0) return -1;
    if (r->factors != NULL && !pamb_factors_valid(r->factors)) return -1;
    if (r->camera != NULL && !pamb_camera_valid(r->camera)) return -1;
    buf[0] = '\0';
    snprintf(num, sizeof num, "%ld", r->id);
    puts_(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    puts_(&b, num);
    puts_(&b, ",\"method\":\"auth.authenticate\",\"params\":{\"user\":");
    put_json_string(&b, r->user);
    if (r->factors != NULL) {
        puts_(&b, ",\"factors\":[");
        const char *p = r->factors;
        for (int first = 1;; first = 0) {
            size_t n = strcspn(p, ",");
            if (!first) puts_(&b, ",");
            puts_(&b, "\"");
            put(&b, p, n);
            puts_(&b, "\"");
            if (p[n] == '\0') break;
            p += n + 1;
        }
        puts_(&b, "]");
    }
    if (r->camera != NULL) {
        puts_(&b, ",\"camera\":");
        put_json_string(&b, r->camera);
    }
    snprintf(num, sizeof num, "%ld", r->timeout_ms);
    puts_(&b, ",\"timeout_ms\":");
    puts_(&b, num);
    if (r->other_user) puts_(&b, ",\"other_user\":true");
    if (r->require_arrival) puts_(&b, ",\"require_arrival\":true");
    puts_(&b, "}}\n");
    return b.bad ? -1 : (int)b.len;
}

static int build_user_call(char *buf, size_t cap, long id, const char *method, const char *user)
{
    struct sbuf b = { buf, cap, 0, 0 };
    char num[32];
    if (buf == NULL || cap == 0 || !pamb_user_valid(user)) return -1;
    buf[0] = '\0';
    snprintf(num, sizeof num, "%ld", id);
    puts_(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    puts_(&b, num);
    puts_(&b, ",\"method\":\"");
    puts_(&b, method);
    puts_(&b, "\",\"params\":{\"user\":");
    put_json_string(&b, user);
    puts_(&b, "}}\n");
    return b.bad ? -1 : (int)b.len;
}

int pamb_build_user_get(char *buf, size_t cap, long id, const char *user)
{
    return build_user_call(buf, cap, id, "user.get", user);
}

/* Whether the array token arr holds the string s. */
static int array_has(const struct bjson_doc *d, int arr, const char *s)
{
    if (bjson_type(d, arr) != BJSON_ARRAY) return 0;
    for (unsigned int k = 0; k < d->tok[arr].count && k < 16; k++)
        if (bjson_str_eq(d, bjson_at(d, arr, k), s)) return 1;
    return 0;
}

int pamb_parse_user_get(const char *line, size_t len, long expect_id, const char *user, struct pamb_enrolment *e)
{
    memset(e, 0, sizeof *e);
    if (line == NULL || len > PAMB_MAX_LINE) return -1;
    struct bjson_tok *toks = malloc(PAMB_MAX_TOKENS * sizeof *toks);
    if (toks == NULL) return -1;
    struct bjson_doc doc;
    const struct bjson_doc *d = &doc;
    int v = -1;
    if (bjson_parse(&doc, line, len, toks, PAMB_MAX_TOKENS) < 0 || bjson_type(d, 0) != BJSON_OBJECT) goto done;
    if (!bjson_str_eq(d, bjson_get(d, 0, "jsonrpc"), "2.0")) goto done;
    int method = bjson_get(d, 0, "method"), id = bjson_get(d, 0, "id");
    if (method == -2 || id == -2) goto done;
    if (method >= 0) { v = id == -1 ? 2 : -1; goto done; } /* a notification: not the answer */
    long long got;
    if (bjson_int(d, id, &got) < 0 || got != expect_id) goto done;
    int result = bjson_get(d, 0, "result"), error = bjson_get(d, 0, "error");
    if (result == -2 || error == -2 || (result >= 0) == (error >= 0)) goto done;
    if (error >= 0) { v = bjson_type(d, error) == BJSON_OBJECT ? 0 : -1; goto done; }
    if (bjson_type(d, result) != BJSON_OBJECT || !bjson_str_eq(d, bjson_get(d, result, "name"), user)) goto done;
    long long face = 0, finger = 0;
    if (bjson_int(d, bjson_get(d, result, "face_templates"), &face) < 0 ||
        bjson_int(d, bjson_get(d, result, "finger_templates"), &finger) < 0)
        goto done;
    int policy = bjson_get(d, result, "policy");
    if (bjson_type(d, policy) != BJSON_ARRAY) goto done;
    e->face = face > 0 && array_has(d, policy, "face");
    e->finger = finger > 0 && array_has(d, policy, "finger");
    v = 1;
done:
    free(toks);
    return v;
}

int pamb_build_clear_request(char *buf, size_t cap, long id, const char *user)
{
    return build_user_call(buf, cap, id, "auth.lockout.clear", user);
}
