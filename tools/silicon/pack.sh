#!/usr/bin/env bash
# tools/silicon/pack.sh: build/silicon.tgz for a lent real-CPU machine (docs/silicon.md):
# the workplace's silicon-bundle.sh (QEMU, OVMF, run.sh) with tools/silicon/campaign.cfg,
# plus the probes (a static tools/silicon/probe.c and cpuid(1), libc only).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd); cd "$here"
bundler=${SILICON_BUNDLE:-../shared/tools/silicon-bundle.sh}
[ -e "$bundler" ] || { echo "pack.sh: $bundler not found (set SILICON_BUNDLE)"; exit 1; }
bash "$bundler" tools/silicon/campaign.cfg
"${CC:-clang}" -static -O2 -Wall -o build/silicon/probe tools/silicon/probe.c
cp "$(command -v cpuid)" build/silicon/cpuid
tar -C build -czf build/silicon.tgz --sparse silicon
ls -l build/silicon.tgz
