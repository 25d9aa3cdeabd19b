/* libv4l2 plugin for the HIL harness (Tests/hil): when HIL_V4L2_FORMATS is set (e.g. "GREY" or
 * "NV12,GREY"), a video-capture device shows only those pixel formats to the process, as a camera
 * that offers nothing else would. Frames still come from the real driver: only VIDIOC_ENUM_FMT is
 * filtered and S_FMT/TRY_FMT of a hidden format is refused. Without the variable the plugin
 * declines every device (libv4l2 then uses the next plugin or none). With HIL_V4L2_FORMATS_NODE
 * (e.g. "/dev/video2") only that node is filtered: one vivid instance of two made GREY-only, an
 * IR node beside a colour one (the ir-pair scenario).
 * Installed into the VM's chroot only, never on the host. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/videodev2.h>
#include <libv4l-plugin.h>

struct priv { uint32_t allowed[8]; int n; };

static int sys_ioctl(int fd, unsigned long req, void *arg) { return (int)syscall(SYS_ioctl, fd, req, arg); }

static int allowed(struct priv *p, uint32_t f) {
    for (int i = 0; i < p->n; i++) if (p->allowed[i] == f) return 1;
    return 0;
}

static void *hil_init(int fd) {
    const char *env = getenv("HIL_V4L2_FORMATS");
    if (!env || !*env) return NULL;
    const char *node = getenv("HIL_V4L2_FORMATS_NODE");
    if (node && *node) {
        struct stat want, have;
        if (stat(node, &want) != 0 || fstat(fd, &have) != 0 || want.st_rdev != have.st_rdev) return NULL;
    }
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof cap);
    if (sys_ioctl(fd, VIDIOC_QUERYCAP, &cap) != 0) return NULL;
    uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
    if (!(caps & V4L2_CAP_VIDEO_CAPTURE)) return NULL;
    struct priv *p = calloc(1, sizeof *p);
    for (const char *s = env; *s && p->n < 8;) {
        if (strlen(s) < 4) break;
        p->allowed[p->n++] = v4l2_fourcc(s[0], s[1], s[2], s[3]);
        s += 4;
        while (*s == ',' || *s == ' ') s++;
    }
    return p;
}

static void hil_close(void *priv) { free(priv); }

static int hil_ioctl(void *priv, int fd, unsigned long req, void *arg) {
    struct priv *p = priv;
    if (req == VIDIOC_ENUM_FMT) {
        struct v4l2_fmtdesc *d = arg;
        if (d->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) return sys_ioctl(fd, req, arg);
        uint32_t want = d->index, seen = 0;
        for (uint32_t i = 0; i < 256; i++) {
            struct v4l2_fmtdesc t = *d;
            t.index = i;
            int r = sys_ioctl(fd, req, &t);
            if (r != 0) return r;
            if (!allowed(p, t.pixelformat)) continue;
            if (seen++ == want) { t.index = want; *d = t; return 0; }
        }
        errno = EINVAL;
        return -1;
    }
    if (req == VIDIOC_S_FMT || req == VIDIOC_TRY_FMT) {
        struct v4l2_format *f = arg;
        if (f->type == V4L2_BUF_TYPE_VIDEO_CAPTURE && !allowed(p, f->fmt.pix.pixelformat))
            f->fmt.pix.pixelformat = p->allowed[0];
    }
    if (req == VIDIOC_ENUM_FRAMESIZES && !allowed(p, ((struct v4l2_frmsizeenum *)arg)->pixel_format)) {
        errno = EINVAL;
        return -1;
    }
    return sys_ioctl(fd, req, arg);
}

static ssize_t hil_read(void *priv, int fd, void *buf, size_t n) { (void)priv; return read(fd, buf, n); }
static ssize_t hil_write(void *priv, int fd, const void *buf, size_t n) { (void)priv; return write(fd, buf, n); }

__attribute__((visibility("default"))) const struct libv4l_dev_ops libv4l2_plugin = {
    .init = hil_init, .close = hil_close, .ioctl = hil_ioctl, .read = hil_read, .write = hil_write,
};
