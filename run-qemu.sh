#!/usr/bin/env bash
# Boots pmulab under QEMU + OVMF: ./run-qemu.sh [options] -- [pmulab command line]
# Installs missing packages first, builds if needed. See ./run-qemu.sh --help.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A failed install is "missing dependency" (127), not apt's own status.
"$here/tools/install-deps.sh" || {
  st=$?
  echo "run-qemu: error: missing dependencies could not be installed (tools/install-deps.sh exit status $st, see above)" >&2
  exit 127
}
exec python3 "$here/tools/qemu_run.py" "$@"
