// The per-CPU PMU census (`pmulab info`, `pmulab-cpuid`): collection on every
// logical processor and the two report forms (human table, JSON Lines).
#pragma once

#include "x86/probe.h"
#include "base/value.h"

namespace pmulab {

struct CpuRecord {
    u32 index = 0;
    bool topology_known = false;
    CpuTopology topo;
    CpuidSnapshot raw;
    CpuDecoded dec;
    // IA32_PERF_CAPABILITIES read attempted (PDCM set) but faulted.
    bool perf_caps_fault = false;
    // NetBurst: IA32_MISC_ENABLE[7] (Performance Monitoring Available) as read on the CPU
    // (unknown in offline dumps and on other CPUs).
    enum class NetBurstPerfmon : u8 { unknown, available, disabled, read_fault };
    NetBurstPerfmon netburst_perfmon = NetBurstPerfmon::unknown;
    // Could not run on this CPU (MP Services error); dec is empty then.
    bool collected = false;
    char error[160] = {};
};

// Where a record came from, for the report header.
struct CensusSource {
    const char* what = "live";  // "live" or a dump file name
};

// Probes every logical processor (BSP included) once, on it, then decodes.
// A CPU that cannot be reached is recorded with its error; the call fails only
// when the processor list itself is unavailable.
Status census_collect(Hw& hw, Vec<CpuRecord>& out);

// Fills a collected record from the probe of its CPU (pmu_probe, pmu/pmu.h), then
// decodes it (census_decode). Pure: no hardware access.
void census_from_probe(const CpuProbe& probe, CpuRecord& r);

// Fills dec (and apic_id/topology when not known) from raw; used for dumps too.
void census_decode(CpuRecord& r);

// Human-readable report: a summary, one row per CPU, and a detailed PMU block for
// each distinct PMU (hybrid parts show one block per core type).
// It ends with the vector extensions `run --code` can use (one line, or one per CPU
// where they differ), as the records' "vector_extensions".
void census_table(const Vec<CpuRecord>& cpus, StrBuf& out);

// The caches of each group of CPUs with the same CPUID cache leaves, one line per level
// with the CPUs sharing it (x86/cache_geometry.h; docs/cache.md "Cache geometry").
void census_caches(const Vec<CpuRecord>& cpus, StrBuf& out);

// The topology from CPUID (x86/topology.h) where some core runs several logical processors:
// packages, cores, logical processors, the SMT siblings, and where the firmware's location
// disagrees (census_topology.cpp). Nothing without SMT siblings.
void census_topology(const Vec<CpuRecord>& cpus, StrBuf& out);
// The record's "topology" object: CPUID's source, x2APIC ID, package/core/thread, layout.
class JsonWriter;
void census_topology_json(JsonWriter& w, const CpuRecord& r);

// What to try next where no collected CPU has a PMU and all run under a hypervisor (QEMU
// TCG, KVM without PMU passthrough): one line after `info`'s report; nothing otherwise.
void census_next_step(const Vec<CpuRecord>& cpus, StrBuf& out);

// The vector extensions user code can run on this CPU (names as in the records:
// "sse", ..., "avx2", "avx512f", ...) into names; returns how many (at most max).
usize census_vector_extensions(const CpuRecord& r, const char** names, usize max);
inline constexpr usize kVectorExtensionsMax = 16;

struct TscFreq;  // census/tsc_freq.h
// One JSON object per CPU, newline-terminated (JSON Lines); with tsc (live `info`) also
// "tsc_hz", "tsc_source", "tsc_detail".
void census_json(const CpuRecord& r, StrBuf& out, const TscFreq* tsc = nullptr);
// The same record as a value (what census_json prints).
Value census_record(const CpuRecord& r, const TscFreq* tsc = nullptr);

}  // namespace pmulab
