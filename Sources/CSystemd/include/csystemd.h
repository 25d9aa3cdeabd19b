// Thin C shim over libsystemd's sd-daemon API (sd_notifyf is variadic; Swift builds the string).
#ifndef CSYSTEMD_H
#define CSYSTEMD_H
#include <stdint.h>
#include <stddef.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <stdlib.h>
#include <malloc.h>

static inline int csd_notify(const char *state) { return sd_notify(0, state); }
static inline int csd_listen_fds(void) { return sd_listen_fds(1); }
static inline int csd_listen_fds_start(void) { return SD_LISTEN_FDS_START; }
/// Returns the watchdog interval in microseconds, or 0 when no watchdog is asked for.
static inline uint64_t csd_watchdog_usec(void) {
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}
static inline int csd_is_socket_unix(int fd) { return sd_is_socket_unix(fd, 1 /* SOCK_STREAM */, 1, NULL, 0); }

/// The uid of the active session's user on `seat` (logind), or a negative errno (no active
/// session, no logind). The session name is not needed and is freed here.
static inline int csd_seat_active_uid(const char *seat, uint32_t *uid) {
    char *session = NULL;
    uid_t owner = 0;
    int r = sd_seat_get_active(seat, &session, &owner);
    free(session);
    if (r < 0) return r;
    *uid = (uint32_t)owner;
    return 0;
}

/// Not systemd, but the same place in the service's life: glibc's malloc_trim, which hands freed
/// heap pages back to the system (Swift's Glibc module does not export malloc.h).
static inline int csd_release_free_memory(void) { return malloc_trim(0); }
#endif
