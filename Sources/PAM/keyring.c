/*
 * The keyring secret (issue 36, Docs/auth.md "The keyring"): a user's login password, sealed by
 * the TPM through systemd-creds, so that a face or finger login can hand it to
 * pam_gnome_keyring / pam_kwallet5 as PAM_AUTHTOK and the login keyring opens as after a
 * password login.
 *
 *   /var/lib/biometricd-keyring/           root 0700
 *   /var/lib/biometricd-keyring/UID.cred   root 0600, systemd-creds --with-key=host+tpm2,
 *                                          credential name "biometricd-keyring-UID"
 *
 * The sealed text names the user and uid it belongs to and the password hash /etc/shadow held
 * when it was sealed; a password changed since (the hash differs) makes it stale: it is removed
 * and the user told. Only root processes seal (the password helper, after PAM accepted the
 * password; the module's chauthtok after a password change) and unseal (the module in a root
 * login process, after a match). The daemon never sees it.
 *
 * Shared by pam_biometricd.so and biometricd-password. systemd-creds runs through posix_spawn
 * with a fixed argv and environment, no shell, the secret only on pipes, a deadline, and every
 * other descriptor closed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pam_biometricd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <shadow.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD_HEADER "biometricd-keyring v1"
#define CREDS_BIN "/usr/bin/systemd-creds"

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pamb_keyring_path(char *buf, size_t cap, unsigned uid)
{
    int n = snprintf(buf, cap, "%s/%u.cred", PAMB_KEYRING_DIR, uid);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void cred_name(char *buf, size_t cap, unsigned uid)
{
    snprintf(buf, cap, "--name=biometricd-keyring-%u", uid);
}

/* ---- the payload ------------------------------------------------------------------------- */

static const char hexd[] = "0123456789abcdef";

int pamb_keyring_payload(char *buf, size_t cap, const char *user, unsigned uid, const char *shadow_hash,
                         const char *password)
{
    size_t pl = strlen(password), o;
    if (!pamb_user_valid(user) || pl == 0 || pl > PAMB_MAX_PASSWORD || strlen(shadow_hash) == 0 ||
        strlen(shadow_hash) > PAMB_MAX_SHADOW || strpbrk(shadow_hash, " \n\r") != NULL)
        return -1;
    int n = snprintf(buf, cap, PAYLOAD_HEADER "\nuser %s\nuid %u\nshadow %s\npassword ", user, uid, shadow_hash);
    if (n < 0 || (size_t)n + 2 * pl + 2 > cap) return -1;
    o = (size_t)n;
    for (size_t i = 0; i < pl; i++) {
        unsigned char c = (unsigned char)password[i];
        buf[o++] = hexd[c >> 4];
        buf[o++] = hexd[c & 15];
    }
    buf[o++] = '\n';
    buf[o] = '\0';
    return (int)o;
}

/* The line "KEY VALUE\n" at *p: VALUE into out (cap), *p moved past the line. */
static int take_line(const char **p, const char *end, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (nl == NULL || (size_t)(nl - *p) <= kl + 1 || strncmp(*p, key, kl) != 0 || (*p)[kl] != ' ') return -1;
    size_t vl = (size_t)(nl - (*p + kl + 1));
    if (vl >= cap) return -1;
    memcpy(out, *p + kl + 1, vl);
    out[vl] = '\0';
    *p = nl + 1;
    return (int)vl;
}

static int unhex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int pamb_keyring_parse(const char *buf, size_t len, const char *user, unsigned uid, char *shadow, size_t scap,
                       char *password, size_t pcap)
{
    const char *p = buf, *end = buf + len;
    char name[PAMB_MAX_USER + 1], num[16], hex[2 * PAMB_MAX_PASSWORD + 1];
    size_t hl = strlen(PAYLOAD_HEADER);
    int rc = -1;
    if (len < hl + 1 || memcmp(p, PAYLOAD_HEADER "\n", hl + 1) != 0) return -1;
    p += hl + 1;
    if (take_line(&p, end, "user", name, sizeof name) < 0 || strcmp(name, user) != 0) goto out;
    snprintf(num, sizeof num, "%u", uid);
    char got[16];
    if (take_line(&p, end, "uid", got, sizeof got) < 0 || strcmp(got, num) != 0) goto out;
    if (take_line(&p, end, "shadow", shadow, scap) <= 0) goto out;
    int hn = take_line(&p, end, "password", hex, sizeof hex);
    if (hn <= 0 || hn % 2 != 0 || (size_t)(hn / 2) >= pcap || p != end) goto out;
    for (int i = 0; i < hn / 2; i++) {
        int a = unhex(hex[2 * i]), b = unhex(hex[2 * i + 1]);
        if (a < 0 || b < 0) goto out;
        password[i] = (char)(a * 16 + b);
        if (password[i] == '\0') goto out;
    }
    password[hn / 2] = '\0';
    rc = 0;
out:
    explicit_bzero(hex, sizeof hex);
    if (rc != 0) explicit_bzero(password, pcap);
    return rc;
}

int pamb_shadow_hash(const char *user, char *buf, size_t cap)
{
    struct spwd sp, *res = NULL;
    char tmp[4096];
    int rc = -1;
    if (getspnam_r(user, &sp, tmp, sizeof tmp, &res) == 0 && res != NULL && res->sp_pwdp != NULL &&
        strlen(res->sp_pwdp) > 1 && strlen(res->sp_pwdp) < cap) {
        snprintf(buf, cap, "%s", res->sp_pwdp);
        rc = 0;
    }
    explicit_bzero(tmp, sizeof tmp);
    return rc;
}

/* ---- systemd-creds ----------------------------------------------------------------------- */

/* Runs systemd-creds with argv, `in` on its stdin, its stdout into out (cap), its stderr's first
 * line into err. Everything within `deadline` (monotonic ms); after it the child is killed.
 * Returns its exit status (0 success), or -1 (could not run, killed, output too long). */
static int run_creds(char *const argv[], const char *in, size_t inlen, char *out, size_t cap, size_t *outlen,
                     char *err, size_t ecap, long long deadline)
{
    int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    pid_t pid = -1;
    int rc = -1, status = 0;
    size_t got = 0, egot = 0;
    char ebuf[512];
    static char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_LOG_LEVEL=err", "LC_ALL=C", NULL };

    *outlen = 0;
    if (err && ecap) err[0] = '\0';
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) goto done;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
    posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
    posix_spawn_file_actions_adddup2(&fa, perr[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    int sp = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (sp != 0) { pid = -1; goto done; }
    close(pin[0]); pin[0] = -1;
    close(pout[1]); pout[1] = -1;
    close(perr[1]); perr[1] = -1;
    /* The input is small (under 2 KiB): it fits the pipe, so writing it all first cannot block. */
    if (inlen > 0 && write(pin[1], in, inlen) != (ssize_t)inlen) goto done;
    close(pin[1]); pin[1] = -1;
    int open_fds = 2;
    while (open_fds > 0) {
        long long left = deadline - mono_ms();
        if (left <= 0) goto done;
        struct pollfd p[2] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 } };
        int pr = poll(p, 2, (int)left);
        if (pr < 0) { if (errno == EINTR) continue; goto done; }
        for (int i = 0; i < 2; i++) {
            int fd = i == 0 ? pout[0] : perr[0];
            if (fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = i == 0 ? read(fd, out + got, cap - got) : read(fd, ebuf + egot, sizeof ebuf - 1 - egot);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                close(fd);
                if (i == 0) pout[0] = -1; else perr[0] = -1;
                open_fds--;
                continue;
            }
            if (i == 0) { got += (size_t)n; if (got >= cap) goto done; }
            else if ((egot += (size_t)n) >= sizeof ebuf - 1) { close(perr[0]); perr[0] = -1; open_fds--; }
        }
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno == EINTR) continue;
        /* ECHILD: the application reaps its children itself; judge by the output alone. */
        status = 0;
        break;
    }
    pid = -1;
    *outlen = got;
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
done:
    if (pid > 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    }
    if (err && ecap) {
        ebuf[egot < sizeof ebuf ? egot : sizeof ebuf - 1] = '\0';
        char *nl = strchr(ebuf, '\n');
        if (nl) *nl = '\0';
        snprintf(err, ecap, "%s", ebuf);
    }
    for (int i = 0; i < 2; i++) {
        if (pin[i] >= 0) close(pin[i]);
        if (pout[i] >= 0) close(pout[i]);
        if (perr[i] >= 0) close(perr[i]);
    }
    if (rc != 0) {
        explicit_bzero(out, got < cap ? got : cap);
        *outlen = 0;
    }
    return rc;
}

int pamb_keyring_unseal(unsigned uid, char *out, size_t cap, size_t *len, long long deadline, char *why, size_t wcap)
{
    char path[128], name[64];
    struct stat st;
    if (pamb_keyring_path(path, sizeof path, uid) < 0) return -1;
    if (lstat(path, &st) < 0) return errno == ENOENT ? PAMB_KEYRING_NONE : -1;
    /* root's own file, readable by nobody else, in root's 0700 folder */
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0) {
        snprintf(why, wcap, "%s is not a root-only file", path);
        return -1;
    }
    if (stat(PAMB_KEYRING_DIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0) {
        snprintf(why, wcap, "%s is not root's 0700 folder", PAMB_KEYRING_DIR);
        return -1;
    }
    cred_name(name, sizeof name, uid);
    char *const argv[] = { CREDS_BIN, "decrypt", name, path, "-", NULL };
    int rc = run_creds(argv, NULL, 0, out, cap, len, why, wcap, deadline);
    return rc == 0 ? 0 : -1;
}

int pamb_keyring_seal(unsigned uid, const char *payload, size_t plen, long long deadline, char *why, size_t wcap)
{
    char path[128], tmp[160], name[64], sealed[8192];
    size_t slen = 0;
    int rc = -1, fd = -1;
    if (access("/dev/tpmrm0", F_OK) != 0) {
        snprintf(why, wcap, "no TPM 2.0 (/dev/tpmrm0): the password would be sealed by the host key alone, "
                            "readable from a copy of the disk; not sealed");
        return -1;
    }
    if (pamb_keyring_path(path, sizeof path, uid) < 0) return -1;
    if (mkdir(PAMB_KEYRING_DIR, 0700) < 0 && errno != EEXIST) {
        snprintf(why, wcap, "cannot create %s: %s", PAMB_KEYRING_DIR, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(PAMB_KEYRING_DIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0) {
        snprintf(why, wcap, "%s is not root's 0700 folder", PAMB_KEYRING_DIR);
        return -1;
    }
    cred_name(name, sizeof name, uid);
    char *const argv[] = { CREDS_BIN, "encrypt", "--with-key=host+tpm2", name, "-", "-", NULL };
    rc = run_creds(argv, payload, plen, sealed, sizeof sealed, &slen, why, wcap, deadline);
    if (rc != 0 || slen == 0) {
        if (why[0] == '\0') snprintf(why, wcap, "systemd-creds encrypt failed (status %d)", rc);
        return -1;
    }
    rc = -1;
    snprintf(tmp, sizeof tmp, "%s.new", path);
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, sealed, slen) != (ssize_t)slen || fsync(fd) < 0) {
        snprintf(why, wcap, "cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0) {
        snprintf(why, wcap, "cannot rename %s: %s", tmp, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0) close(fd);
    if (rc != 0) unlink(tmp);
    return rc;
}

int pamb_keyring_remove(unsigned uid)
{
    char path[128];
    if (pamb_keyring_path(path, sizeof path, uid) < 0) return -1;
    if (unlink(path) == 0) return 1;
    return errno == ENOENT ? 0 : -1;
}
