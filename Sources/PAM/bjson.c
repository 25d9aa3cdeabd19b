/* bjson: see include/bjson.h. No recursion, no allocation, every index bounds-checked. */
#include "bjson.h"

#include <string.h>

/* Length of the UTF-8 sequence at s[i..end), or 0 when it is not well-formed. */
static size_t utf8_seq(const unsigned char *s, size_t i, size_t end)
{
    unsigned char c = s[i];
    size_t n;
    unsigned int cp, min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { n = 2; cp = c & 0x1fu; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { n = 3; cp = c & 0x0fu; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; cp = c & 0x07u; min = 0x10000; }
    else return 0;
    if (end - i < n) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i + k] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

int bjson_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(u, i, len);
        if (n == 0) return 0;
        i += n;
    }
    return 1;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads 4 hex digits at s[i..end). Returns the value or -1. */
static long hex4(const unsigned char *s, size_t i, size_t end)
{
    long v = 0;
    if (end - i < 4) return -1;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s[i + (size_t)k]);
        if (h < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

/* Decodes one escape starting at the backslash s[i]. Sets *cp and returns the bytes used, 0 on
 * error. Surrogates must come as a valid high+low pair. */
static size_t unescape(const unsigned char *s, size_t i, size_t end, unsigned long *cp)
{
    if (end - i < 2) return 0;
    switch (s[i + 1]) {
    case '"': *cp = '"'; return 2;
    case '\\': *cp = '\\'; return 2;
    case '/': *cp = '/'; return 2;
    case 'b': *cp = '\b'; return 2;
    case 'f': *cp = '\f'; return 2;
    case 'n': *cp = '\n'; return 2;
    case 'r': *cp = '\r'; return 2;
    case 't': *cp = '\t'; return 2;
    case 'u': break;
    default: return 0;
    }
    long hi = hex4(s, i + 2, end);
    if (hi < 0) return 0;
    if (hi >= 0xdc00 && hi <= 0xdfff) return 0;
    if (hi < 0xd800 || hi > 0xdbff) { *cp = (unsigned long)hi; return 6; }
    if (end - i < 12 || s[i + 6] != '\\' || s[i + 7] != 'u') return 0;
    long lo = hex4(s, i + 8, end);
    if (lo < 0xdc00 || lo > 0xdfff) return 0;
    *cp = 0x10000ul + (((unsigned long)hi - 0xd800ul) << 10) + ((unsigned long)lo - 0xdc00ul);
    return 12;
}

/* Checks the string whose opening quote is at s[*p]; leaves *p after the closing quote. */
static int scan_string(const unsigned char *s, size_t len, size_t *p)
{
    size_t i = *p + 1;
    while (i < len) {
        unsigned char c = s[i];
        if (c == '"') { *p = i + 1; return 0; }
        if (c < 0x20) return -1;
        if (c == '\\') {
            unsigned long cp;
            size_t n = unescape(s, i, len, &cp);
            if (n == 0) return -1;
            i += n;
        } else {
            size_t n = utf8_seq(s, i, len);
            if (n == 0) return -1;
            i += n;
        }
    }
    return -1;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int scan_number(const unsigned char *s, size_t len, size_t *p)
{
    size_t i = *p;
    if (i < len && s[i] == '-') i++;
    if (i >= len) return -1;
    if (s[i] == '0') i++;
    else if (s[i] >= '1' && s[i] <= '9') { while (i < len && is_digit(s[i])) i++; }
    else return -1;
    if (i < len && s[i] == '.') {
        i++;
        if (i >= len || !is_digit(s[i])) return -1;
        while (i < len && is_digit(s[i])) i++;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= len || !is_digit(s[i])) return -1;
        while (i < len && is_digit(s[i])) i++;
    }
    *p = i;
    return 0;
}

enum state { S_VALUE, S_VALUE_OR_END, S_KEY, S_KEY_OR_END, S_COLON, S_COMMA_OR_END, S_DONE };

int bjson_parse(struct bjson_doc *doc, const char *src, size_t len,
                struct bjson_tok *toks, unsigned int cap)
{
    const unsigned char *s = (const unsigned char *)src;
    unsigned int stack[BJSON_MAX_DEPTH];
    unsigned int depth = 0, n = 0;
    enum state st = S_VALUE;
    size_t p = 0;

    doc->src = src; doc->tok = toks; doc->n = 0;
    if (len > 0x7fffffffu || cap == 0) return -1;
    for (;;) {
        while (p < len && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) p++;
        if (p >= len) break;
        unsigned char c = s[p];
        switch (st) {
        case S_DONE:
            return -1;
        case S_COLON:
            if (c != ':') return -1;
            p++;
            st = S_VALUE;
            continue;
        case S_KEY_OR_END:
        case S_COMMA_OR_END:
        case S_VALUE_OR_END: {
            unsigned int top = stack[depth - 1];
            int is_obj = toks[top].type == BJSON_OBJECT;
            if ((c == '}' && is_obj && st != S_VALUE_OR_END) ||
                (c == ']' && !is_obj && st != S_KEY_OR_END)) {
                toks[top].next = n;
                depth--;
                p++;
                st = depth ? S_COMMA_OR_END : S_DONE;
                continue;
            }
            if (st == S_COMMA_OR_END) {
                if (c != ',') return -1;
                p++;
                st = is_obj ? S_KEY : S_VALUE;
                continue;
            }
            st = is_obj ? S_KEY : S_VALUE;
            continue; /* re-read c as a key or value */
        }
        case S_KEY:
        case S_VALUE:
            break;
        }

        /* A key or a value starts at p: it gets token n. */
        if (n >= cap) return -1;
        struct bjson_tok *t = &toks[n];
        memset(t, 0, sizeof *t);
        t->start = (unsigned int)p;
        if (st == S_KEY) {
            if (c != '"') return -1;
            size_t q = p;
            if (scan_string(s, len, &q) < 0) return -1;
            t->type = BJSON_STRING;
            t->start = (unsigned int)(p + 1);
            t->len = (unsigned int)(q - p - 2);
            t->next = ++n;
            toks[stack[depth - 1]].count++;
            p = q;
            st = S_COLON;
            continue;
        }
        if (depth > 0 && toks[stack[depth - 1]].type == BJSON_ARRAY) toks[stack[depth - 1]].count++;
        if (c == '{' || c == '[') {
            if (depth >= BJSON_MAX_DEPTH) return -1;
            t->type = c == '{' ? BJSON_OBJECT : BJSON_ARRAY;
            stack[depth++] = n++;
            p++;
            st = c == '{' ? S_KEY_OR_END : S_VALUE_OR_END;
            continue;
        }
        if (c == '"') {
            size_t q = p;
            if (scan_string(s, len, &q) < 0) return -1;
            t->type = BJSON_STRING;
            t->start = (unsigned int)(p + 1);
            t->len = (unsigned int)(q - p - 2);
            p = q;
        } else if (c == '-' || is_digit(c)) {
            size_t q = p;
            if (scan_number(s, len, &q) < 0) return -1;
            t->type = BJSON_NUMBER;
            t->len = (unsigned int)(q - p);
            p = q;
        } else if (len - p >= 4 && memcmp(s + p, "true", 4) == 0) {
            t->type = BJSON_TRUE; t->len = 4; p += 4;
        } else if (len - p >= 5 && memcmp(s + p, "false", 5) == 0) {
            t->type = BJSON_FALSE; t->len = 5; p += 5;
        } else if (len - p >= 4 && memcmp(s + p, "null", 4) == 0) {
            t->type = BJSON_NULL; t->len = 4; p += 4;
        } else {
            return -1;
        }
        t->next = ++n;
        st = depth ? S_COMMA_OR_END : S_DONE;
    }
    if (st != S_DONE) return -1;
    doc->n = n;
    return 0;
}

int bjson_type(const struct bjson_doc *doc, int i)
{
    if (i < 0 || (unsigned int)i >= doc->n) return 0;
    return doc->tok[i].type;
}

int bjson_str(const struct bjson_doc *doc, int i, char *buf, size_t cap)
{
    if (bjson_type(doc, i) != BJSON_STRING || cap == 0) return -1;
    const unsigned char *s = (const unsigned char *)doc->src;
    size_t p = doc->tok[i].start, end = p + doc->tok[i].len, o = 0;
    while (p < end) {
        unsigned long cp;
        if (s[p] != '\\') {
            if (o + 1 >= cap) return -1;
            buf[o++] = (char)s[p++];
            continue;
        }
        size_t used = unescape(s, p, end, &cp); /* already validated by bjson_parse */
        if (used == 0 || cp == 0) return -1;
        p += used;
        unsigned char enc[4];
        size_t k;
        if (cp < 0x80) { enc[0] = (unsigned char)cp; k = 1; }
        else if (cp < 0x800) { enc[0] = (unsigned char)(0xc0 | (cp >> 6)); enc[1] = (unsigned char)(0x80 | (cp & 0x3f)); k = 2; }
        else if (cp < 0x10000) { enc[0] = (unsigned char)(0xe0 | (cp >> 12)); enc[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); enc[2] = (unsigned char)(0x80 | (cp & 0x3f)); k = 3; }
        else { enc[0] = (unsigned char)(0xf0 | (cp >> 18)); enc[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f)); enc[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); enc[3] = (unsigned char)(0x80 | (cp & 0x3f)); k = 4; }
        if (o + k >= cap) return -1;
        memcpy(buf + o, enc, k);
        o += k;
    }
    buf[o] = '\0';
    return (int)o;
}

int bjson_str_eq(const struct bjson_doc *doc, int i, const char *s)
{
    char buf[256];
    size_t n = strlen(s);
    if (n >= sizeof buf) return 0;
    if (bjson_type(doc, i) != BJSON_STRING || doc->tok[i].len < n) return 0;
    if (doc->tok[i].len > 6 * n) return 0; /* cannot decode to n bytes */
    int got = bjson_str(doc, i, buf, sizeof buf);
    return got >= 0 && (size_t)got == n && memcmp(buf, s, n) == 0;
}

int bjson_get(const struct bjson_doc *doc, int obj, const char *key)
{
    if (bjson_type(doc, obj) != BJSON_OBJECT) return -1;
    int found = -1;
    unsigned int k = (unsigned int)obj + 1;
    for (unsigned int m = 0; m < doc->tok[obj].count && k + 1 < doc->n; m++) {
        if (bjson_str_eq(doc, (int)k, key)) {
            if (found >= 0) return -2;
            found = (int)k + 1;
        }
        k = doc->tok[k + 1].next;
    }
    return found;
}

int bjson_at(const struct bjson_doc *doc, int arr, unsigned int k)
{
    if (bjson_type(doc, arr) != BJSON_ARRAY || k >= doc->tok[arr].count) return -1;
    unsigned int i = (unsigned int)arr + 1;
    while (k-- > 0 && i < doc->n) i = doc->tok[i].next;
    return i < doc->n ? (int)i : -1;
}

int bjson_int(const struct bjson_doc *doc, int i, long long *out)
{
    if (bjson_type(doc, i) != BJSON_NUMBER) return -1;
    const char *s = doc->src + doc->tok[i].start;
    unsigned int len = doc->tok[i].len, p = 0;
    int neg = 0;
    long long v = 0;
    if (p < len && s[p] == '-') { neg = 1; p++; }
    if (p >= len || len - p > 15) return -1;
    for (; p < len; p++) {
        if (s[p] < '0' || s[p] > '9') return -1;
        v = v * 10 + (s[p] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}
