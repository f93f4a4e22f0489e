#!/usr/bin/env bash
# Builds a GPT disk image with one EFI system partition, without root:
#   \EFI\BOOT\BOOTX64.EFI     pmulab
#   \pmulab\pmulab.cfg        the campaign (one command per line)
#   \pmulab\results\          where pmulab writes its results
#   plus any extra SRC=DEST pairs (DEST like ::/pmulab/events/x.evt)
# Campaign lines with --asm TEXT (--asm-init, --asm-late-init, --asm-one-time-init, --att)
# are assembled into --code HEX first (tools/pmulab-asm); bad assembly: status 2.
# usage: tools/mkimage.sh OUT.img PMULAB.efi CONFIG|- [SRC=DEST ...] [--size MiB]
set -euo pipefail
usage() { echo "usage: $0 OUT.img PMULAB.efi CONFIG|- [SRC=DEST ...] [--size MiB]" >&2; exit 2; }
[[ $# -ge 3 ]] || usage
out=$1 efi=$2 cfg=$3; shift 3
size_mib=64
extras=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --size) size_mib=${2:?--size needs MiB}; shift 2 ;;
    *=*) extras+=("$1"); shift ;;
    *) usage ;;
  esac
done
[[ -f $efi ]] || { echo "mkimage: $efi not found (run make)" >&2; exit 1; }
[[ $cfg == - || -f $cfg ]] || { echo "mkimage: config $cfg not found" >&2; exit 1; }
[[ $size_mib =~ ^[0-9]+$ && $size_mib -ge 40 ]] || { echo "mkimage: --size must be >= 40 (MiB)" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp" "$tmp.cfg" "$tmp.in" "$tmp.err"' EXIT
if [[ $cfg == - ]]; then cat > "$tmp.in"; else cp "$cfg" "$tmp.in"; fi
if grep -q -e '--asm' -e '--att' "$tmp.in"; then
  python3 "$here/pmulab-asm" --campaign "$tmp.in" "$tmp.cfg" 2> "$tmp.err" || {
    sed "s|$tmp.in|${cfg/#-/stdin}|" "$tmp.err" >&2; rm -f "$tmp.err"; exit 2; }
  rm -f "$tmp.err"
else
  mv "$tmp.in" "$tmp.cfg"
fi
truncate -s "${size_mib}M" "$tmp"
# ESP from 1 MiB to the end, type EF00.
sgdisk --clear --new=1:2048:0 --typecode=1:ef00 --change-name=1:"EFI System" "$tmp" >/dev/null
first=2048
last=$(sgdisk -i 1 "$tmp" | awk '/^Last sector:/ {print $3}')
sectors=$((last - first + 1))
img="$tmp@@$((first * 512))"
export MTOOLS_SKIP_CHECK=1
mformat -i "$img" -F -T "$sectors" -h 64 -s 32 -v PMULAB ::
mmd -i "$img" ::/EFI ::/EFI/BOOT ::/pmulab ::/pmulab/results
mcopy -i "$img" "$efi" ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$img" "$tmp.cfg" ::/pmulab/pmulab.cfg
rm -f "$tmp.cfg" "$tmp.in"
for e in "${extras[@]}"; do
  src=${e%%=*}; dst=${e#*=}
  dir=$(dirname "${dst#::}")
  # Create parent folders as needed.
  path=""
  IFS=/ read -ra parts <<< "${dir#/}"
  for p in "${parts[@]}"; do
    [[ -z $p ]] && continue
    path="$path/$p"
    mmd -i "$img" "::$path" 2>/dev/null || true
  done
  mcopy -o -i "$img" "$src" "$dst"
done
mv "$tmp" "$out"
trap - EXIT
