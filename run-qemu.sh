#!/usr/bin/env bash
# Boots pmulab under QEMU + OVMF: ./run-qemu.sh [options] -- [pmulab command line]
# Installs missing packages first, builds if needed. See ./run-qemu.sh --help.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/tools/install-deps.sh"
exec python3 "$here/tools/qemu_run.py" "$@"
