/* tools/silicon/probe.c: what a Linux machine says about its PMU before pmulab boots on it.
 * Static, libc only, so it runs on a lent machine with no package registry (docs/silicon.md).
 * Prints CPUID 0AH (Intel architectural PMU, SDM Vol. 3B 20.2.x) and 8000_0001H.ECX[23]
 * PerfCtrExtCore / 8000_0022H (AMD PerfMonV2, APM Vol. 2 13.2), tries perf_event_open for
 * the four generic hardware events, and reads a few PMU MSRs through /dev/cpu/0/msr. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned sink; /* the measured loop's result, kept */

static void leaf(unsigned l, unsigned s, unsigned r[4]) { __cpuid_count(l, s, r[0], r[1], r[2], r[3]); }

static void perf_try(const char *name, uint64_t config) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = config;
  a.disabled = 1;
  a.exclude_kernel = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
  if (fd < 0) { printf("perf_event_open(%s): %s\n", name, strerror(errno)); return; }
  ioctl(fd, PERF_EVENT_IOC_RESET, 0);
  ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  for (unsigned i = 0; i < 1000000; i++) sink += i;
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  uint64_t v = 0;
  if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = ~0ull;
  printf("perf_event_open(%s): ok, %llu over a 1e6-iteration loop\n", name, (unsigned long long)v);
  close(fd);
}

static void msr_try(unsigned msr, const char *name) {
  int fd = open("/dev/cpu/0/msr", O_RDONLY);
  if (fd < 0) { printf("msr %#x %s: /dev/cpu/0/msr: %s\n", msr, name, strerror(errno)); return; }
  uint64_t v = 0;
  if (pread(fd, &v, sizeof v, msr) != (ssize_t)sizeof v)
    printf("msr %#x %s: read failed: %s\n", msr, name, strerror(errno));
  else
    printf("msr %#x %s: %#llx\n", msr, name, (unsigned long long)v);
  close(fd);
}

int main(void) {
  unsigned r[4], v[4];
  leaf(0, 0, v);
  char vendor[13];
  memcpy(vendor, &v[1], 4); memcpy(vendor + 4, &v[3], 4); memcpy(vendor + 8, &v[2], 4);
  vendor[12] = 0;
  leaf(1, 0, r);
  printf("CPUID.0: max leaf %#x vendor %s; CPUID.1: eax=%#x ecx=%#x (hypervisor bit %u, PDCM %u)\n",
         v[0], vendor, r[0], r[2], (r[2] >> 31) & 1, (r[2] >> 15) & 1);
  if (v[0] >= 0xa) {
    leaf(0xa, 0, r);
    printf("CPUID.0AH: eax=%#x ebx=%#x ecx=%#x edx=%#x (version %u, %u GP x %u bits, %u fixed)\n",
           r[0], r[1], r[2], r[3], r[0] & 0xff, (r[0] >> 8) & 0xff, (r[0] >> 16) & 0xff, r[3] & 0x1f);
  }
  leaf(0x80000000, 0, v);
  if (v[0] >= 0x80000001) {
    leaf(0x80000001, 0, r);
    printf("CPUID.80000001H: ecx=%#x (PerfCtrExtCore %u, PerfCtrExtLLC %u)\n", r[2], (r[2] >> 23) & 1,
           (r[2] >> 28) & 1);
  }
  if (v[0] >= 0x80000022) {
    leaf(0x80000022, 0, r);
    printf("CPUID.80000022H: eax=%#x ebx=%#x (PerfMonV2 %u, %u core counters)\n", r[0], r[1], r[0] & 1,
           r[1] & 0xf);
  }
  leaf(0x40000000, 0, r);
  char hv[13];
  memcpy(hv, &r[1], 4); memcpy(hv + 4, &r[2], 4); memcpy(hv + 8, &r[3], 4);
  hv[12] = 0;
  for (int i = 0; i < 12; i++) if (hv[i] && (hv[i] < 32 || hv[i] > 126)) hv[i] = '.';
  printf("CPUID.40000000H: max %#x signature \"%s\"\n", r[0], hv);
  perf_try("instructions", PERF_COUNT_HW_INSTRUCTIONS);
  perf_try("cycles", PERF_COUNT_HW_CPU_CYCLES);
  perf_try("branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
  perf_try("ref-cycles", PERF_COUNT_HW_REF_CPU_CYCLES);
  msr_try(0x345, "IA32_PERF_CAPABILITIES");
  msr_try(0x38f, "IA32_PERF_GLOBAL_CTRL");
  msr_try(0x186, "IA32_PERFEVTSEL0");
  msr_try(0xc0010000, "AMD PERF_CTL0");
  return 0;
}
