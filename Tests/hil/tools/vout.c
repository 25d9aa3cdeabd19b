/* vout: loops raw frames into a V4L2 video-output device (vivid's HDMI output in the HIL VM).
 *
 *   vout DEVICE FILE WIDTH HEIGHT FOURCC [HOLD]
 *
 * FILE holds whole frames in FOURCC (YUYV, GREY, NV12, RGB3) at WIDTHxHEIGHT, as made by
 * `hiltool frames`. Each frame is shown for HOLD output periods (default 1), the file loops until
 * SIGTERM. Unlike `v4l2-ctl --stream-from`, the file is read once and a buffer is only written
 * when its content must change: under qemu TCG a 60 Hz copy of 600 KB frames costs a whole vCPU.
 * Sets the output format itself; the caller sets input/output routing and DV timings. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/videodev2.h>

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static int xioctl(int fd, unsigned long req, void *arg) {
    int r;
    do { r = ioctl(fd, req, arg); } while (r == -1 && errno == EINTR && !stop);
    return r;
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: vout DEVICE FILE WIDTH HEIGHT FOURCC [HOLD]\n"); return 2; }
    const char *dev = argv[1], *path = argv[2], *fcc = argv[5];
    unsigned w = atoi(argv[3]), h = atoi(argv[4]), hold = argc > 6 ? atoi(argv[6]) : 1;
    if (hold < 1) hold = 1;
    signal(SIGTERM, on_signal); signal(SIGINT, on_signal);

    int fd = open(dev, O_RDWR);
    if (fd < 0) { perror(dev); return 1; }
    struct v4l2_format fmt = {0};
    fmt.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    fmt.fmt.pix.width = w; fmt.fmt.pix.height = h;
    fmt.fmt.pix.pixelformat = v4l2_fourcc(fcc[0], fcc[1], fcc[2], fcc[3]);
    fmt.fmt.pix.field = V4L2_FIELD_NONE;
    if (xioctl(fd, VIDIOC_S_FMT, &fmt) < 0) { perror("VIDIOC_S_FMT"); return 1; }
    if (fmt.fmt.pix.width != w || fmt.fmt.pix.height != h || fmt.fmt.pix.pixelformat != v4l2_fourcc(fcc[0], fcc[1], fcc[2], fcc[3])) {
        fprintf(stderr, "vout: device chose %ux%u %.4s\n", fmt.fmt.pix.width, fmt.fmt.pix.height, (char *)&fmt.fmt.pix.pixelformat);
        return 1;
    }
    size_t fsize = fmt.fmt.pix.sizeimage;

    int in = open(path, O_RDONLY);
    struct stat st;
    if (in < 0 || fstat(in, &st) < 0) { perror(path); return 1; }
    size_t nframes = st.st_size / fsize;
    if (nframes == 0) { fprintf(stderr, "vout: %s is smaller than one %zu-byte frame\n", path, fsize); return 1; }
    unsigned char *data = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, in, 0);
    if (data == MAP_FAILED) { perror("mmap file"); return 1; }

    struct v4l2_requestbuffers req = {0};
    req.count = 4; req.type = V4L2_BUF_TYPE_VIDEO_OUTPUT; req.memory = V4L2_MEMORY_MMAP;
    if (xioctl(fd, VIDIOC_REQBUFS, &req) < 0 || req.count < 2) { perror("VIDIOC_REQBUFS"); return 1; }
    unsigned nbuf = req.count;
    unsigned char *buf[32];
    long shows[32];  /* which source frame each buffer holds (-1: none) */
    unsigned long tick = 0;
    for (unsigned i = 0; i < nbuf && i < 32; i++) {
        struct v4l2_buffer b = {0};
        b.type = V4L2_BUF_TYPE_VIDEO_OUTPUT; b.memory = V4L2_MEMORY_MMAP; b.index = i;
        if (xioctl(fd, VIDIOC_QUERYBUF, &b) < 0) { perror("VIDIOC_QUERYBUF"); return 1; }
        buf[i] = mmap(NULL, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, b.m.offset);
        if (buf[i] == MAP_FAILED) { perror("mmap buffer"); return 1; }
        long want = (tick / hold) % nframes;
        memcpy(buf[i], data + want * fsize, fsize);
        shows[i] = want;
        b.bytesused = fsize; b.field = V4L2_FIELD_NONE;
        if (xioctl(fd, VIDIOC_QBUF, &b) < 0) { perror("VIDIOC_QBUF"); return 1; }
        tick++;
    }
    int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    if (xioctl(fd, VIDIOC_STREAMON, &type) < 0) { perror("VIDIOC_STREAMON"); return 1; }
    fprintf(stderr, "vout: %s: %zu frames of %ux%u %s, hold %u\n", dev, nframes, w, h, fcc, hold);
    while (!stop) {
        struct v4l2_buffer b = {0};
        b.type = V4L2_BUF_TYPE_VIDEO_OUTPUT; b.memory = V4L2_MEMORY_MMAP;
        if (xioctl(fd, VIDIOC_DQBUF, &b) < 0) {
            if (stop) break;
            perror("VIDIOC_DQBUF");
            return 1;
        }
        long want = (tick / hold) % nframes;
        if (shows[b.index] != want) { memcpy(buf[b.index], data + want * fsize, fsize); shows[b.index] = want; }
        b.bytesused = fsize; b.field = V4L2_FIELD_NONE;
        if (xioctl(fd, VIDIOC_QBUF, &b) < 0) { if (stop) break; perror("VIDIOC_QBUF"); return 1; }
        tick++;
    }
    xioctl(fd, VIDIOC_STREAMOFF, &type);
    return 0;
}
