/*
 * In-process driver of pam_biometricd.so through the real libpam (pam_start with a service
 * file in /etc/pam.d), for the cases pamtester cannot express. Used by Tests/pam/run.sh.
 *
 *   pam_driver fuzz SERVICE N     N authentications against fake_daemon.py --mode fuzz: the
 *                                 daemon sends a valid success on every 10th connection (0, 10,
 *                                 ...) and hostile replies on the others; PAM_SUCCESS must come
 *                                 exactly on those. Prints "N passed, M failed".
 *   pam_driver sigint SERVICE     SIGINT (with a handler, as sudo has) 300 ms into a hanging
 *                                 call: must return PAM_AUTHINFO_UNAVAIL within 1 s.
 *   pam_driver noconv SERVICE     application without a conversation function: PAM_SUCCESS.
 *   pam_driver noconv-verdict SERVICE  the same, printing the pam_authenticate() result name.
 *   pam_driver silent SERVICE     PAM_SILENT: PAM_SUCCESS and no message shown.
 *   pam_driver verdict SERVICE    prints the pam_authenticate() result name (e.g. for
 *                                 `auth required` stacks) and exits 0.
 */
#include <security/pam_appl.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int infos;

static int conv(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
    (void)data;
    struct pam_response *r = calloc((size_t)n, sizeof *r);
    if (r == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        if (msg[i]->msg_style == PAM_TEXT_INFO || msg[i]->msg_style == PAM_ERROR_MSG) infos++;
        else { free(r); return PAM_CONV_ERR; } /* the module must never prompt */
    }
    *resp = r;
    return PAM_SUCCESS;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int authenticate(const char *service, int with_conv, int flags)
{
    struct pam_conv c = { with_conv ? conv : NULL, NULL };
    pam_handle_t *h = NULL;
    int rc = pam_start(service, "alice", &c, &h);
    if (rc != PAM_SUCCESS) { fprintf(stderr, "pam_start: %d\n", rc); exit(2); }
    rc = pam_authenticate(h, flags);
    pam_end(h, rc);
    return rc;
}

static void on_sigint(int sig) { (void)sig; }

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: pam_driver fuzz|sigint|noconv|noconv-verdict|silent|verdict SERVICE [N]\n"); return 2; }
    const char *mode = argv[1], *service = argv[2];
    if (strcmp(mode, "fuzz") == 0) {
        long n = argc > 3 ? atol(argv[3]) : 2000, passed = 0, failed = 0, successes = 0;
        double t0 = now();
        for (long i = 0; i < n; i++) {
            int rc = authenticate(service, 1, 0);
            int want = i % 10 == 0;
            if ((rc == PAM_SUCCESS) == want) passed++;
            else { failed++; fprintf(stderr, "FAIL connection %ld: %s\n", i, pam_strerror(NULL, rc)); }
            successes += rc == PAM_SUCCESS;
        }
        fprintf(stderr, "pam_driver: %ld connections in %.1f s, %ld successes, %d messages shown\n",
                n, now() - t0, successes, infos);
        printf("%ld passed, %ld failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    if (strcmp(mode, "sigint") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint; /* no SA_RESTART: poll() gets EINTR, as in sudo */
        sigaction(SIGINT, &sa, NULL);
        pid_t parent = getpid(), child = fork();
        if (child == 0) { usleep(300000); kill(parent, SIGINT); _exit(0); }
        double t0 = now();
        int rc = authenticate(service, 1, 0);
        double took = now() - t0;
        waitpid(child, NULL, 0);
        printf("%s after %.2f s\n", pam_strerror(NULL, rc), took);
        return rc == PAM_AUTHINFO_UNAVAIL && took < 1.0 ? 0 : 1;
    }
    if (strcmp(mode, "noconv") == 0) {
        int rc = authenticate(service, 0, 0);
        printf("%s\n", pam_strerror(NULL, rc));
        return rc == PAM_SUCCESS ? 0 : 1;
    }
    if (strcmp(mode, "noconv-verdict") == 0) {
        int rc = authenticate(service, 0, 0);
        printf("%s\n", pam_strerror(NULL, rc));
        return 0;
    }
    if (strcmp(mode, "silent") == 0) {
        int rc = authenticate(service, 1, PAM_SILENT);
        printf("%s, %d messages\n", pam_strerror(NULL, rc), infos);
        return rc == PAM_SUCCESS && infos == 0 ? 0 : 1;
    }
    if (strcmp(mode, "verdict") == 0) {
        int rc = authenticate(service, 1, 0);
        printf("%s\n", pam_strerror(NULL, rc));
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
