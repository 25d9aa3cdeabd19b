#!/usr/bin/env bash
# python-fido2 (PyPI fido2 2.x, installed by scripts/setup.sh) against the FIDO2 authenticator over
# the test socket transport (Tests/fido/test_fido.py): registration and authentication with UV,
# discoverable credentials, excludeList, cancel during UV, PIN tokens in both protocols, wrong PINs
# until PIN_BLOCKED, credential management, and 100,000 malformed HID frames plus 100,000 malformed
# CBOR requests; then test_daemon.py: biometricd's own authenticator over its test socket, UV by a
# live face, clientPIN on the daemon PIN. About 15 s; needs no root and no /dev/uhid.
#
#   Tests/fido/run.sh            (FIDO_TEST_AUTHENTICATOR: the binary; default: swift build's)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -z "${FIDO_TEST_AUTHENTICATOR:-}" ]; then
    swift build --product fido-test-authenticator >/dev/null
    FIDO_TEST_AUTHENTICATOR=$(swift build --show-bin-path)/fido-test-authenticator
fi
python3 -c 'import importlib.metadata as m, sys; sys.exit(0 if int(m.version("fido2").split(".")[0]) >= 2 else 1)' \
    || { echo "Tests/fido/run.sh: needs PyPI fido2 2.x (scripts/setup.sh installs it)" >&2; exit 1; }
export FIDO_TEST_AUTHENTICATOR
# Then the daemon itself over its test socket, UV by a live face (skipped without models or clip).
if [ -z "${BIOMETRICD:-}" ]; then
    swift build --product biometricd >/dev/null
    BIOMETRICD=$(swift build --show-bin-path)/biometricd
fi
export BIOMETRICD
exec python3 -m unittest -v Tests/fido/test_fido.py Tests/fido/test_daemon.py
