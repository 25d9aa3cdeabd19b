// Thin C shim over libsystemd's sd-daemon API (sd_notifyf is variadic; Swift builds the string).
#ifndef CSYSTEMD_H
#define CSYSTEMD_H
#include <stdint.h>
#include <stddef.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <systemd/sd-bus.h>
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

/// logind's LidClosed (org.freedesktop.login1.Manager): 1 closed, 0 open, a negative errno when
/// it cannot be read (no system bus, no logind). One short system-bus connection per call.
static inline int csd_lid_closed(void) {
    sd_bus *bus = NULL;
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int closed = 0;
    int r = sd_bus_open_system(&bus);
    if (r < 0) return r;
    r = sd_bus_get_property_trivial(bus, "org.freedesktop.login1", "/org/freedesktop/login1",
                                    "org.freedesktop.login1.Manager", "LidClosed", &error, 'b', &closed);
    sd_bus_error_free(&error);
    sd_bus_flush_close_unref(bus);
    return r < 0 ? r : (closed ? 1 : 0);
}

/// logind's PrepareForSleep signal, watched on a system-bus connection of its own (one thread
/// blocks in csd_sleep_wait). `state`: set by the match callback to 1 (going to sleep) or 2
/// (resumed).
typedef struct csd_sleep_watch { sd_bus *bus; int state; } csd_sleep_watch;

static inline int csd_sleep_callback(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)error;
    int start = 0;
    if (sd_bus_message_read(m, "b", &start) >= 0) ((csd_sleep_watch *)userdata)->state = start ? 1 : 2;
    return 0;
}

/// Connects and subscribes. 0, or a negative errno (no system bus).
static inline int csd_sleep_open(csd_sleep_watch *w) {
    w->bus = NULL;
    w->state = 0;
    int r = sd_bus_open_system(&w->bus);
    if (r < 0) return r;
    r = sd_bus_match_signal(w->bus, NULL, "org.freedesktop.login1", "/org/freedesktop/login1",
                            "org.freedesktop.login1.Manager", "PrepareForSleep", csd_sleep_callback, w);
    if (r < 0) { w->bus = sd_bus_flush_close_unref(w->bus); return r; }
    return 0;
}

/// Waits up to `timeout_usec` for the next PrepareForSleep: 1 going to sleep, 2 resumed, 0 none
/// in time, a negative errno when the connection is gone.
static inline int csd_sleep_wait(csd_sleep_watch *w, uint64_t timeout_usec) {
    for (;;) {
        int r = sd_bus_process(w->bus, NULL);
        if (r < 0) return r;
        if (w->state != 0) { int s = w->state; w->state = 0; return s; }
        if (r > 0) continue;
        r = sd_bus_wait(w->bus, timeout_usec);
        if (r < 0) return r;
        if (r == 0) return 0;
    }
}

static inline void csd_sleep_close(csd_sleep_watch *w) {
    if (w->bus) w->bus = sd_bus_flush_close_unref(w->bus);
}

/// Not systemd, but the same place in the service's life: glibc's malloc_trim, which hands freed
/// heap pages back to the system (Swift's Glibc module does not export malloc.h).
static inline int csd_release_free_memory(void) { return malloc_trim(0); }

/// glibc's M_MMAP_THRESHOLD, fixed: blocks of `bytes` or more are mapped on their own and unmapped
/// when freed. glibc's default threshold rises to the largest block freed (up to 32 MiB), after
/// which a network's activation buffers (the learned finger extractor's: 6-26 MB each) come from
/// a heap arena instead and stay there: a finger-only daemon held 120 MB instead of 72 MB after
/// eight prints in some runs. Setting it also turns that adjustment off.
static inline int csd_fix_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
#endif
