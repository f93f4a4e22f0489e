// CPUID capture and decoding of the identification and performance-monitoring
// leaves. Capture is allocation-free so that it can run on an AP.
//
// Leaf layouts: Intel SDM Vol. 2A, CPUID instruction reference (leaves 00H, 01H,
// 07H, 0AH, 1AH, 23H); Vol. 3B §20.2 (architectural performance monitoring
// versions 1–6); AMD APM Vol. 3 Appendix E (Fn8000_0001, Fn8000_0022).
#pragma once

#include "base/fmt.h"
#include "x86/hw.h"

namespace pmulab {

struct CpuidEntry {
    u32 leaf = 0, subleaf = 0;
    CpuidRegs regs;
};

// The raw leaves captured on (or read from a dump of) one logical processor.
struct CpuidSnapshot {
    static constexpr u32 kMaxEntries = 64;
    CpuidEntry entries[kMaxEntries];
    u32 count = 0;

    // Returns false when the leaf/subleaf is not in the snapshot.
    bool find(u32 leaf, u32 subleaf, CpuidRegs* out) const;
    // Zeroes when absent.
    CpuidRegs get(u32 leaf, u32 subleaf = 0) const;
    bool has(u32 leaf, u32 subleaf = 0) const;
    // Adds or replaces; returns false when full.
    bool set(u32 leaf, u32 subleaf, const CpuidRegs& r);
};

using CpuidQueryFn = CpuidRegs (*)(void* ctx, u32 leaf, u32 subleaf);

// Reads the leaves pmulab decodes, each only when the maximum leaf and the
// enumeration bits say it exists (QEMU and real CPUs return the highest basic leaf's
// data for out-of-range leaves, so reading blindly gives garbage).
void capture_cpuid(CpuidQueryFn query, void* ctx, CpuidSnapshot* out);
void capture_cpuid(Hw& hw, CpuidSnapshot* out);

// The leaves capture_cpuid may read (0, 1, 7, 0AH, 0BH, 1AH, 1FH, 23H, 4000_0000H,
// 8000_0000H-8000_0004H, 8000_0022H; 04H except on AMD/Hygon; on AMD/Hygon also 06H,
// 8000_0005H-8000_0008H, 8000_001DH and 8000_001EH), for readers of offline dumps that keep only
// what the decoder uses. cpuid_subleaf_is_captured also bounds the sub-leaf the
// same way capture_cpuid does (7: 0-1, 0BH: 0-1, 1FH: 0-5, 23H: 0-5, 04H and 8000_001DH: 0-7,
// others: 0).
bool cpuid_leaf_is_captured(u32 leaf);
bool cpuid_subleaf_is_captured(u32 leaf, u32 subleaf);

enum class Vendor : u8 { intel, amd, hygon, zhaoxin, other };
// AMD and Hygon (Hygon's Dhyana is a Zen core: AMD's CPUID leaves, MSRs and PMU).
constexpr bool is_amd_family(Vendor v) { return v == Vendor::amd || v == Vendor::hygon; }
const char* vendor_id_name(Vendor v);

// Architectural events enumerated by CPUID.0AH:EBX (bit i set = NOT available),
// Intel SDM Vol. 3B Table 20-1 (was 18-1).
enum ArchEventBit : u8 {
    kArchCoreCycles = 0,
    kArchInstructionsRetired = 1,
    kArchReferenceCycles = 2,
    kArchLlcReferences = 3,
    kArchLlcMisses = 4,
    kArchBranchInstructionsRetired = 5,
    kArchBranchMispredictsRetired = 6,
    kArchTopdownSlots = 7,
    kArchTopdownBackendBound = 8,
    kArchTopdownBadSpeculation = 9,
    kArchTopdownFrontendBound = 10,
    kArchTopdownRetiring = 11,
    kArchLbrInserts = 12,
    kArchEventCount = 13,
};
// snake_case names used in JSON ("core_cycles", ...), and human names.
const char* arch_event_key(unsigned bit);
const char* arch_event_title(unsigned bit);

// Hybrid core types, CPUID.1AH:EAX[31:24].
enum : u8 { kCoreTypeNone = 0, kCoreTypeAtom = 0x20, kCoreTypeCore = 0x40 };
const char* core_type_name(u8 core_type);

struct CpuIdentity {
    Vendor vendor = Vendor::other;
    char vendor_string[13] = {};
    char brand[49] = {};
    u32 max_leaf = 0;
    u32 max_ext_leaf = 0;
    u32 signature = 0;                        // CPUID.01H:EAX
    u32 family = 0, model = 0, stepping = 0;  // display values (SDM rules)
    u32 initial_apic_id = 0;                  // CPUID.01H:EBX[31:24]
    bool hypervisor = false;                  // CPUID.01H:ECX[31]
    bool pdcm = false;                        // CPUID.01H:ECX[15]
    bool hybrid = false;                      // CPUID.(07H,0):EDX[15]
    bool arch_perfmon_ext = false;            // CPUID.(07H,1):EAX[8] (leaf 23H exists)
    // CPUID.1AH (Native Model ID Enumeration Leaf, SDM Vol. 2A): read whenever the leaf
    // exists (max leaf >= 1AH), also on non-hybrid parts (an Atom-only SoC reports core
    // type 0x20, some server parts 0x40). core_type is the hybrid PMU's core type and stays
    // kCoreTypeNone on non-hybrid parts (their PMU is not per core type); leaf_1a_core_type
    // is the raw value either way.
    bool leaf_1a = false;                  // leaf read (max leaf >= 1AH)
    u8 leaf_1a_core_type = kCoreTypeNone;  // CPUID.1AH:EAX[31:24], raw
    u8 core_type = kCoreTypeNone;          // CPUID.1AH:EAX[31:24] on hybrid parts
    u32 native_model_id = 0;               // CPUID.1AH:EAX[23:0]
};

// Intel architectural performance monitoring (CPUID.0AH, 23H) and the AMD core PMU.
struct PmuCaps {
    // CPUID.0AH (Intel SDM Vol. 3B §20.2.1–20.2.7)
    bool leaf_0a = false;               // leaf read (max leaf >= 0AH)
    u8 version = 0;                     // EAX[7:0]
    u8 gp_counters = 0;                 // EAX[15:8]
    u8 gp_width = 0;                    // EAX[23:16]
    u8 ebx_length = 0;                  // EAX[31:24]
    u32 ebx = 0;                        // raw: set bit = event NOT available
    u32 events_unavailable = 0;         // EBX bits within ebx_length (of the kArchEventCount known)
    u32 events_available = 0;           // known events within ebx_length whose bit is clear
    u32 fixed_mask = 0;                 // ECX: fixed counter bitmap (v5+)
    u8 fixed_counters = 0;              // EDX[4:0]
    u8 fixed_width = 0;                 // EDX[12:5]
    bool anythread_deprecated = false;  // EDX[15]
    u32 fixed_effective = 0;            // bit i: ECX[i] || EDX[4:0] > i (v2+)
    // Core 2 (v2) reports EDX = 0 but has three fixed counters (Linux assumes 3 on
    // bare metal for v2..v4 when EDX[4:0] < 3).
    bool fixed_count_quirk = false;

    // CPUID.23H (Intel SDM Vol. 2A, "Architectural Performance Monitoring Extended Leaf")
    bool leaf_23 = false;
    u32 leaf23_subleaves = 0;         // sub-leaf 0 EAX: valid sub-leaf bitmap
    bool umask2 = false;              // sub-leaf 0 EBX[0]
    bool eq_bit = false;              // sub-leaf 0 EBX[1]
    bool rdpmc_user_disable = false;  // sub-leaf 0 EBX[2]
    u32 topdown_slots_per_cycle = 0;  // sub-leaf 0 ECX[7:0]
    u32 gp_bitmap = 0;                // sub-leaf 1 EAX
    u32 fixed_bitmap = 0;             // sub-leaf 1 EBX
    u32 acr_gp_bitmap = 0;            // sub-leaf 2 EAX (auto counter reload)
    u32 acr_fixed_bitmap = 0;         // sub-leaf 2 EBX
    u32 arch_events_bitmap = 0;       // sub-leaf 3 EAX (available architectural events)

    // AMD (APM Vol. 2 §13.2, Vol. 3 CPUID Fn8000_0001_ECX[23], Fn8000_0022)
    bool amd_perfctr_core = false;    // PerfCtrExtCore: 6 counters at C001_0200
    bool amd_perfmon_v2 = false;      // Fn8000_0022_EAX[0]
    bool amd_lbr_v2 = false;          // Fn8000_0022_EAX[1]
    bool amd_lbr_pmc_freeze = false;  // Fn8000_0022_EAX[2] LbrAndPmcFreeze (DEBUGCTL[12]/[11] on PMI)
    u8 amd_core_counters = 0;         // Fn8000_0022_EBX[3:0] (v2), else 6 or 4
    u8 amd_lbr_stack_size = 0;        // Fn8000_0022_EBX[9:4]
    u8 amd_nb_counters = 0;           // Fn8000_0022_EBX[15:10]
    // IRPerfCount (C000_00E9H): Fn8000_0008_EBX[1] InstRetCntMsr, except on family 17h
    // models 00h-2Fh (Zen 1 / Zen+), where erratum 1054 ("Instructions Retired Performance
    // Counter May Be Inaccurate") makes it unusable: Linux's init_amd_zen1 clears
    // HWCR.IRPerfEn and the capability there, and so does pmulab (PMCx0C0 counts instead).
    bool amd_irperf = false;
    bool amd_irperf_enumerated = false;   // Fn8000_0008_EBX[1] as read
    bool amd_irperf_erratum1054 = false;  // enumerated but disabled by erratum 1054
    // Fn0000_0006_ECX[0] EffFreq: the architectural MPERF/APERF (E7H/E8H).
    bool amd_efffreq = false;
    // Fn8000_0007_EDX[10] EffFreqRO: the read-only aliases MPERF_RO/APERF_RO
    // (C000_00E7H/C000_00E8H), which only exist where it is set (not on K8-K10, for one).
    bool amd_efffreq_ro = false;

    // Intel NetBurst (family 0FH without architectural perfmon): the ESCR/CCCR PMU
    // (SDM Vol. 3B §20.15). Its presence is confirmed at run time by
    // IA32_MISC_ENABLE[7] (Performance Monitoring Available).
    bool netburst = false;
    u8 netburst_model = 0;     // display model (IQ_ESCR0/1 exist on models 1-2 only)
    bool netburst_ht = false;  // CPUID.01H:EDX[28] and EBX[23:16] > 1: ESCRs shared by 2 threads

    // IA32_PERF_CAPABILITIES (0x345), read only when PDCM is set.
    bool perf_caps_read = false;
    u64 perf_caps = 0;

    // GP counters as a bitmap (leaf 23H bitmap when enumerated, else the count).
    u32 gp_counter_mask() const;
    // Fixed counters as a bitmap (leaf 23H bitmap when enumerated, else fixed_effective,
    // plus the Core 2 quirk).
    u32 fixed_counter_mask() const;
    // Whether any PMU is usable at all.
    bool present() const;
    bool operator==(const PmuCaps& o) const;
};

struct CpuDecoded {
    CpuIdentity id;
    PmuCaps pmu;
};

CpuDecoded decode_cpuid(const CpuidSnapshot& s);

// The hypervisor's vendor signature from CPUID leaf 4000_0000H (EBX, ECX, EDX: "KVMKVMKVM",
// "TCGTCGTCGTCG", "Microsoft Hv"), NUL-terminated; bytes outside printable ASCII become '?'.
void hypervisor_signature(const CpuidRegs& leaf_40000000, char (&out)[13]);

// "06_97H" style signature string: family_model in hex as Intel's event files name it.
void put_signature(StrBuf& out, const CpuIdentity& id);

}  // namespace pmulab
