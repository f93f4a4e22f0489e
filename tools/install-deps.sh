#!/usr/bin/env bash
# Installs what pmulab needs to build, boot and test, on Debian/Ubuntu.
# The Python packages (matplotlib, pytest, pytest-xdist, mypy) are Debian's, which serve
# /usr/bin/python3: tests/run_tests.py runs the tests with that interpreter when the
# python3 first on PATH (pyenv, a venv) lacks them.
# Fast when everything is present (no apt call). Prints the exact command when it
# cannot install (not root and no sudo).
set -euo pipefail

# command-or-file : package
needs=(
  "clang++:clang"
  "ld.lld:lld"
  "objcopy:binutils"
  "make:make"
  "python3:python3"
  "qemu-system-x86_64:qemu-system-x86"
  "/usr/share/OVMF/OVMF_CODE_4M.fd:ovmf"
  "/usr/include/efi/efi.h:gnu-efi"
  "mcopy:mtools"
  "sgdisk:gdisk"
  "/usr/include/gtest/gtest.h:libgtest-dev"
  "/usr/lib/clang:libclang-rt-dev"
  "/usr/lib/python3/dist-packages/matplotlib:python3-matplotlib"
  "/usr/lib/python3/dist-packages/pytest:python3-pytest"
  "/usr/lib/python3/dist-packages/xdist:python3-pytest-xdist"
  "/usr/lib/python3/dist-packages/mypy:mypy"
  "clang-format:clang-format"
  "llvm-mc:llvm"
  "llvm-objdump:llvm"
  "/usr/include/unicorn/unicorn.h:libunicorn-dev"
)
missing=()
for n in "${needs[@]}"; do
  what=${n%%:*}; pkg=${n##*:}
  if [[ $what == /* ]]; then [[ -e $what ]] && continue
  else command -v "$what" >/dev/null 2>&1 && continue; fi
  missing+=("$pkg")
done
# The sanitizer runtime that the unit tests link against.
if ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a >/dev/null 2>&1; then
  missing+=("libclang-rt-dev")
fi
# LAVA's standalone dispatcher for the LAVA tests (tests/py/test_lava.py): unpacked
# into build/lava/ (10 MB), not installed (the lava-dispatcher package would be 1.46 GB).
lava_run="$(cd "$(dirname "$0")/.." && pwd)/build/lava/lava-run"
if [[ ! -x $lava_run ]]; then
  "$(dirname "$0")/lava/get-lava-run.sh" ||
    echo "pmulab: warning: could not fetch lava-run (tools/lava/get-lava-run.sh); the LAVA tests will fail" >&2
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0

# Unique, sorted.
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "pmulab: installing missing packages: ${missing[*]}" >&2
if [[ $(id -u) -eq 0 ]]; then sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo)
else
  echo "pmulab: cannot install as $(id -un) without sudo. Run as root:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
