/*
 * lidswitch: a laptop lid switch for the system test's VM (which has none), made with uinput.
 * udev tags the device as a power switch (ID_INPUT_SWITCH), so systemd-logind watches it and
 * reports its state as the Manager's LidClosed property, exactly as a real lid's.
 *
 *   lidswitch FIFO      creates the device, then reads "close" / "open" lines from FIFO
 *
 * Built on the host (gcc, the same Debian 12 as the guest) by Tests/system/run.sh.
 */
#include <fcntl.h>
#include <linux/uinput.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int emit(int fd, int type, int code, int value)
{
    struct input_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (unsigned short)type;
    ev.code = (unsigned short)code;
    ev.value = value;
    return write(fd, &ev, sizeof ev) == (ssize_t)sizeof ev ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: lidswitch FIFO\n"); return 2; }
    int fd = open("/dev/uinput", O_WRONLY | O_NONBLOCK);
    if (fd < 0) { perror("/dev/uinput"); return 1; }
    struct uinput_setup setup;
    memset(&setup, 0, sizeof setup);
    setup.id.bustype = BUS_VIRTUAL;
    setup.id.vendor = 0x1d6b;
    setup.id.product = 0x0104;
    snprintf(setup.name, sizeof setup.name, "systest lid switch");
    if (ioctl(fd, UI_SET_EVBIT, EV_SW) < 0 || ioctl(fd, UI_SET_SWBIT, SW_LID) < 0 ||
        ioctl(fd, UI_DEV_SETUP, &setup) < 0 || ioctl(fd, UI_DEV_CREATE) < 0) {
        perror("uinput");
        return 1;
    }
    fprintf(stderr, "lidswitch: device created\n");
    for (;;) {
        FILE *in = fopen(argv[1], "r");
        if (!in) { perror(argv[1]); return 1; }
        char line[64];
        while (fgets(line, sizeof line, in)) {
            int closed = strncmp(line, "close", 5) == 0;
            if (!closed && strncmp(line, "open", 4) != 0) {
                if (strncmp(line, "quit", 4) == 0) { ioctl(fd, UI_DEV_DESTROY); return 0; }
                continue;
            }
            if (emit(fd, EV_SW, SW_LID, closed) < 0 || emit(fd, EV_SYN, SYN_REPORT, 0) < 0) perror("write");
            else fprintf(stderr, "lidswitch: %s\n", closed ? "closed" : "open");
        }
        fclose(in);
    }
}
