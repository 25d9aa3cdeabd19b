#!/usr/bin/env bash
# bookworm-sources.sh DIR NAME: writes the host's Debian 12 apt entries (bookworm, -updates,
# -security; deb822 and one-line; no third-party repositories) to DIR/NAME.sources, or to
# DIR/NAME.list when they are one-line entries, and prints that path. mmdebstrap takes the file as
# its mirror. Used by scripts/check-package.sh and Tests/system/run.sh. Exit 1 when the host
# names no bookworm entry.
set -euo pipefail
dir=${1:?folder} name=${2:?name}
sources=$dir/$name.sources
: > "$sources"
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Types:[^\n]*deb([ \t]|\n|$)/ && /(^|\n)Suites:[ \t]*bookworm([ \t]|-updates|-security|\n|$)/' "$f" >> "$sources"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    grep -E '^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+[[:space:]]+bookworm(-updates|-security)?[[:space:]]' "$f" \
        | awk '{ print } END { if (NR) print "" }' >> "$sources" || true
done
[ -s "$sources" ] || { echo "no bookworm entry in /etc/apt/sources.list or /etc/apt/sources.list.d" >&2; exit 1; }
if grep -q '^deb ' "$sources"; then mv "$sources" "$dir/$name.list"; sources=$dir/$name.list; fi
echo "$sources"
