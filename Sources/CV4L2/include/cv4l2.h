// Thin C shim over libv4l2: Swift cannot import the VIDIOC_* function-like macros or the
// variadic v4l2_ioctl, so they are exposed here as plain inline functions.
#ifndef CV4L2_H
#define CV4L2_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <linux/videodev2.h>
#include <linux/uvcvideo.h>
#include <linux/usb/video.h>
#include <libv4l2.h>

static inline unsigned long cv4l2_VIDIOC_QUERYCAP(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long cv4l2_VIDIOC_ENUM_FMT(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long cv4l2_VIDIOC_ENUM_FRAMESIZES(void) { return VIDIOC_ENUM_FRAMESIZES; }
static inline unsigned long cv4l2_VIDIOC_ENUM_FRAMEINTERVALS(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
static inline unsigned long cv4l2_VIDIOC_S_FMT(void) { return VIDIOC_S_FMT; }
static inline unsigned long cv4l2_VIDIOC_G_FMT(void) { return VIDIOC_G_FMT; }
static inline unsigned long cv4l2_VIDIOC_S_PARM(void) { return VIDIOC_S_PARM; }
static inline unsigned long cv4l2_VIDIOC_REQBUFS(void) { return VIDIOC_REQBUFS; }
static inline unsigned long cv4l2_VIDIOC_QUERYBUF(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long cv4l2_VIDIOC_QBUF(void) { return VIDIOC_QBUF; }
static inline unsigned long cv4l2_VIDIOC_DQBUF(void) { return VIDIOC_DQBUF; }
static inline unsigned long cv4l2_VIDIOC_STREAMON(void) { return VIDIOC_STREAMON; }
static inline unsigned long cv4l2_VIDIOC_STREAMOFF(void) { return VIDIOC_STREAMOFF; }

static inline uint32_t cv4l2_fourcc(const char *s) { return v4l2_fourcc(s[0], s[1], s[2], s[3]); }

/// ioctl through libv4l2, retried on EINTR. Returns 0 or -errno.
static inline int cv4l2_ioctl(int fd, unsigned long request, void *arg) {
    int r;
    do { r = v4l2_ioctl(fd, request, arg); } while (r == -1 && errno == EINTR);
    return r == -1 ? -errno : 0;
}

/// Opens without libv4l2's conversion layer (we convert ourselves, once). Returns fd or -errno.
static inline int cv4l2_open(const char *path) {
    int fd = v4l2_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0);
    return fd < 0 ? -errno : fd;
}

static inline void *cv4l2_mmap(int fd, size_t length, int64_t offset) {
    void *p = v4l2_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    return p == MAP_FAILED ? NULL : p;
}
static inline void cv4l2_munmap(void *p, size_t length) { v4l2_munmap(p, length); }
static inline void cv4l2_close(int fd) { v4l2_close(fd); }

/// One UVC extension-unit request (UVCIOC_CTRL_QUERY: UVC_SET_CUR, UVC_GET_CUR, UVC_GET_LEN,
/// UVC_GET_INFO, ...) on an open uvcvideo node, retried on EINTR. Plain ioctl, not v4l2_ioctl:
/// libv4l2 has nothing to convert here. Returns 0 or -errno.
static inline int cv4l2_uvc_xu_query(int fd, uint8_t unit, uint8_t selector, uint8_t query, uint16_t size, uint8_t *data) {
    struct uvc_xu_control_query q = { .unit = unit, .selector = selector, .query = query, .size = size, .data = data };
    int r;
    do { r = ioctl(fd, UVCIOC_CTRL_QUERY, &q); } while (r == -1 && errno == EINTR);
    return r == -1 ? -errno : 0;
}

#endif
