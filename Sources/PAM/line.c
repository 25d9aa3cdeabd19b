/*
 * The password line the module reads itself on a terminal while the camera runs (issue 36:
 * "face and password side by side"). The terminal is in non-canonical mode without echo (so the
 * first key can stop the camera), which means the module does the little line editing the
 * kernel would have done: erase (the terminal's VERASE, and ^H), kill (VKILL), end of file
 * (VEOF) on an empty line, Enter. Everything else below 0x20 is ignored; bytes of 0x20 and above
 * are kept as they come (UTF-8 passwords), and erase removes a whole UTF-8 character.
 *
 * A pure function of the bytes (no I/O): Tests/pam/profile_test.c feeds it every case.
 */
#include "pam_biometricd.h"

#include <string.h>

void pamb_line_init(struct pamb_line *l, unsigned char erase, unsigned char kill, unsigned char eof)
{
    memset(l, 0, sizeof *l);
    l->erase = erase;
    l->kill = kill;
    l->eof_char = eof;
}

enum pamb_line_event pamb_line_feed(struct pamb_line *l, unsigned char c)
{
    if (l->done) return PAMB_LINE_DONE;
    if (c == '\r' || c == '\n') {
        l->done = 1;
        l->buf[l->len] = '\0';
        return PAMB_LINE_DONE;
    }
    if (c == l->eof_char && l->eof_char != 0) {
        if (l->len == 0) {
            l->done = 1;
            l->eof = 1;
            return PAMB_LINE_DONE;
        }
        return PAMB_LINE_MORE; /* ^D inside a line: ignored, as the terminal would */
    }
    l->touched = 1;
    if ((c == l->erase && l->erase != 0) || c == 0x7f || c == 0x08) {
        /* one UTF-8 character: its continuation bytes, then its lead byte */
        while (l->len > 0 && ((unsigned char)l->buf[l->len - 1] & 0xc0) == 0x80) l->len--;
        if (l->len > 0) l->len--;
        l->buf[l->len] = '\0';
        return PAMB_LINE_MORE;
    }
    if (c == l->kill && l->kill != 0) {
        memset(l->buf, 0, sizeof l->buf);
        l->len = 0;
        return PAMB_LINE_MORE;
    }
    if (c < 0x20) return PAMB_LINE_MORE; /* other control characters are not part of a password */
    if (l->len >= PAMB_MAX_PASSWORD) {
        l->overflow = 1; /* kept as typed up to the limit; the rest is dropped */
        return PAMB_LINE_MORE;
    }
    l->buf[l->len++] = (char)c;
    l->buf[l->len] = '\0';
    return PAMB_LINE_MORE;
}

/* The password, once done: what was typed (NULL for end of file). */
const char *pamb_line_text(const struct pamb_line *l)
{
    return l->done && !l->eof ? l->buf : NULL;
}
