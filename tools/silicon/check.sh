#!/usr/bin/env bash
# tools/silicon/check.sh: the one script a lent real-CPU machine runs (docs/silicon.md).
# Usage there: bash tools/silicon/check.sh BUNDLE.tgz OUTDIR
# BUNDLE.tgz is tools/silicon/pack.sh's output (QEMU, OVMF, the campaign image, the probes).
# It prints what the machine says about its PMU (Linux, CPUID, perf, MSRs), then boots the
# campaign under KVM with the host PMU, stopping early when KVM cannot run the firmware.
set -u
bundle=$1; out=$2; mkdir -p "$out"
work=/tmp/pmulab-silicon; rm -rf "$work"; mkdir -p "$work"
tar -xzf "$bundle" -C "$work" || { echo "cannot unpack $bundle"; exit 1; }
b=$work/silicon
{
  echo "== uname"; uname -a
  echo "== cpu"; grep -m1 'model name' /proc/cpuinfo; grep -m1 -E '^(cpu family|model|stepping)' /proc/cpuinfo
  grep -c ^processor /proc/cpuinfo
  echo "== flags of interest"
  grep -m1 ^flags /proc/cpuinfo | tr ' ' '\n' | grep -x -E 'hypervisor|vmx|svm|arch_perfmon|pdcm|perfctr_core|perfctr_nb|perfctr_llc|perfmon_v2|ibs|pebs|bts|lbrv|rdpid|avx512f|amx_tile|rapl' | tr '\n' ' '; echo
  echo "== /dev/kvm"; ls -l /dev/kvm 2>&1
  echo "== kvm modules"; grep -E '^kvm' /proc/modules 2>&1 | cut -d' ' -f1
  for p in /sys/module/kvm/parameters/enable_pmu /sys/module/kvm/parameters/nested \
           /sys/module/kvm_intel/parameters/nested /sys/module/kvm_amd/parameters/nested \
           /sys/module/kvm_intel/parameters/pmu /sys/module/kvm_amd/parameters/enable_mediated_pmu; do
    [ -e "$p" ] && echo "$p = $(cat "$p")"; done
  echo "== perf"; echo "paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>&1)"
  ls /sys/bus/event_source/devices 2>&1 | tr '\n' ' '; echo
  echo "== kernel log"; dmesg 2>&1 | grep -i -E 'perf|pmu|hypervisor|kvm|nmi watchdog' | head -20
  echo "== probe"; "$b/probe"
} > "$out/probe.txt" 2>&1
cat "$out/probe.txt"
"$b/cpuid" -r > "$out/cpuid-r.txt" 2>&1 || echo "cpuid -r failed (see cpuid-r.txt)"
echo "== KVM boot: -cpu ${CPU:-host,pmu=on}"
if [ "${ACCEL:-kvm}" = kvm ] && [ ! -c /dev/kvm ]; then echo "no /dev/kvm: nothing to boot under KVM"; exit 0; fi
cd "$out"
TIMEOUT=${TIMEOUT:-240} "$b/run.sh" > "$out/kvm.txt" 2>&1 &
pid=$!
for i in $(seq 1 "${TIMEOUT:-240}"); do
  sleep 1
  kill -0 $pid 2>/dev/null || break
  if grep -q -E 'KVM internal error|failed to initialize kvm|Could not access KVM' "$out/kvm.txt"; then
    sleep 3; echo "KVM failed after ${i}s; stopping QEMU"; pkill -f pmulab.img; break
  fi
done
wait $pid; echo "QEMU exit status $?"
head -c 200000 "$out/kvm.txt" | grep -v '^$' | head -400
