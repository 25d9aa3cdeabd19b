#!/usr/bin/env bash
# build-pam.sh [OUT]: links pam_biometricd.so from Sources/PAM with cc (default OUT:
# .build/release/pam_biometricd.so). Not a SwiftPM product: a SwiftPM dynamic library always
# needs libswiftCore, and the module is loaded into sudo, login and greeters, which must need
# nothing but libpam, libsystemd (logind: whether the caller's session is local and on the
# camera's seat) and libc. `swift build` compiles the same files (target PAMBiometricd).
# Debian's hardening flags (dpkg-buildflags with hardening=+all): stack protector, stack clash
# protection, CET, fortify, full RELRO.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:-.build/release/pam_biometricd.so}
mkdir -p "$(dirname "$OUT")"
${CC:-cc} -O2 -Wall -Wextra -Werror -fvisibility=hidden -fstack-protector-strong -fstack-clash-protection \
    -fcf-protection -D_FORTIFY_SOURCE=2 -Wformat -Werror=format-security \
    -shared -fPIC -Wl,-z,relro,-z,now -Wl,--as-needed \
    -ISources/PAM/include -o "$OUT" Sources/PAM/pam_biometricd.c Sources/PAM/reply.c Sources/PAM/scope.c Sources/PAM/profile.c \
    Sources/PAM/line.c Sources/PAM/keyring.c Sources/PAM/bjson.c \
    -lpam -lsystemd
echo "$OUT"
