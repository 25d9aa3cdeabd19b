#!/usr/bin/env bash
# The test command: builds everything (the tests start the real biometricd, authctl and
# store-crash-writer executables) and runs the whole suite, then the PAM module's tests through
# the real libpam (Tests/pam/run.sh: pamtester, the real daemon on replay cameras, fuzzing), of
# the root password helper (Tests/password/run.sh), and python-fido2 against the FIDO2
# authenticator (Tests/fido/run.sh).
# Run as root to include the access-control tests that switch to the `nobody` uid and the PAM
# tests (they write a temporary /etc/pam.d file); CI does.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
swift build
swift test "$@"
if [ $# -eq 0 ]; then
    # python-fido2 against the FIDO2 authenticator over the test socket (~10 s, no root needed).
    FIDO_TEST_AUTHENTICATOR=$(swift build --show-bin-path)/fido-test-authenticator Tests/fido/run.sh
    if [ "$(id -u)" -eq 0 ]; then
        scripts/build-pam.sh .build/pam/pam_biometricd.so >/dev/null
        PAM_MODULE=$PWD/.build/pam/pam_biometricd.so BIOMETRICD_BIN=$(swift build --show-bin-path) Tests/pam/run.sh
        # The root password helper (first enrolment) through real PAM, and end to end with the daemon.
        BIOMETRICD_BIN=$(swift build --show-bin-path) Tests/password/run.sh
    else
        echo "Tests/pam/run.sh and Tests/password/run.sh skipped: they need root (temporary /etc/pam.d files, a test user)"
    fi
fi
