#!/usr/bin/env bash
# Fetches LAVA's standalone dispatcher (lava-run) into build/lava/ without installing
# it: `apt-get download` of Debian's lava-dispatcher, lava-common,
# lava-dispatcher-host and the Python modules they import, unpacked with dpkg -x
# (about 6 MB, ~10 s). Installing the lava-dispatcher package itself would pull 296
# packages, 213 MB of downloads and 1.46 GB on disk (libguestfs and its appliance,
# systemd-sysv, ...), and upgrade 23 installed ones: too much for a test step.
# lava-run needs none of that for a QEMU job with a tmpfs deploy; the one module it
# imports unconditionally from there, guestfs (overlays for shell tests), is a stub.
# Writes build/lava/lava-run. Exit status: 0 ok (or already there), 1 failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/build/lava
[[ -x $dest/lava-run ]] && exit 0
pkgs=(lava-dispatcher lava-common lava-dispatcher-host
      python3-voluptuous python3-setproctitle python3-netifaces python3-pyudev python3-configobj
      python3-tz python3-magic python3-aiohttp python3-multidict python3-yarl python3-async-timeout
      python3-aiosignal python3-frozenlist python3-yaml python3-jinja2 python3-markupsafe
      python3-pexpect python3-ptyprocess python3-requests python3-urllib3 python3-idna
      python3-certifi python3-chardet python3-charset-normalizer)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"   # apt's _apt user writes here when run as root
if ! (cd "$tmp" && apt-get download -qq "${pkgs[@]}" >/dev/null 2>"$tmp/err"); then
  echo "get-lava-run: apt-get download failed: $(grep -v '^W:' "$tmp/err" | head -3)" >&2
  exit 1
fi
rm -rf "$dest.new"
mkdir -p "$dest.new/root" "$dest.new/stub"
for d in "$tmp"/*.deb; do dpkg -x "$d" "$dest.new/root"; done
cat > "$dest.new/stub/guestfs.py" <<'PY'
# Stub: lava_dispatcher imports guestfs (libguestfs) at load time for overlay images
# of shell tests; pmulab's jobs (tmpfs deploy, monitors) never call it.
class GuestFS:
    def __init__(self, *a, **k):
        raise RuntimeError("libguestfs is not installed (tools/lava/get-lava-run.sh fetched a stub)")
PY
cat > "$dest.new/lava-run" <<'SH'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
PYTHONPATH="$here/stub:$here/root/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}" \
  exec python3 "$here/root/usr/bin/lava-run" "$@"
SH
chmod +x "$dest.new/lava-run"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "get-lava-run: $(du -sh "$dest" | cut -f1) in $dest (lava-dispatcher $(ls "$tmp"/lava-dispatcher_*.deb | sed 's/.*_\(.*\)_all.deb/\1/'))" >&2
