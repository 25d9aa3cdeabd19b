#!/usr/bin/env python3
"""Types TEXT on a virtual console as its keyboard would (TIOCSTI, root), for the desktop
scenario's greetd/agreety on tty1.   typeon.py /dev/tty1 'alice\\r'"""
import codecs
import fcntl
import os
import sys
import termios

fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
for b in codecs.decode(sys.argv[2], "unicode_escape").encode():
    fcntl.ioctl(fd, termios.TIOCSTI, bytes([b]))
os.close(fd)
