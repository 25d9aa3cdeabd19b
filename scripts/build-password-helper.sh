#!/usr/bin/env bash
# build-password-helper.sh [OUT]: links biometricd-password, the root-owned helper that proves a
# user's account password to biometricd (Docs/auth.md, "Proving the account password"), from
# Sources/PAM/password_helper.c and the PAM module's strict JSON reader (Sources/PAM/bjson.c).
# Default OUT: .build/release/biometricd-password. Not a SwiftPM product: plain C, libpam and
# libsystemd only (the file is empty unless BIOMETRICD_PASSWORD_HELPER is defined, because
# scripts/build-pam.sh and SwiftPM compile every C file in Sources/PAM into the PAM module).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:-.build/release/biometricd-password}
mkdir -p "$(dirname "$OUT")"
${CC:-cc} -O2 -Wall -Wextra -Werror -fstack-protector-strong -fstack-clash-protection -fcf-protection \
    -D_FORTIFY_SOURCE=2 -Wformat -Werror=format-security -fPIE -pie \
    -Wl,-z,relro,-z,now -Wl,--as-needed -DBIOMETRICD_PASSWORD_HELPER \
    -ISources/PAM/include -o "$OUT" Sources/PAM/password_helper.c Sources/PAM/bjson.c Sources/PAM/keyring.c Sources/PAM/reply.c -lpam -lsystemd
echo "$OUT"
