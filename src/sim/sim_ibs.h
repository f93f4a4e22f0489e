// AMD Instruction-Based Sampling of a simulated logical processor (owned by SimCpu),
// written from the AMD APM Vol. 2 §13.3 "Instruction-Based Sampling" and §16.4.5
// "Extended Interrupts", and CPUID Fn8000_001B (APM Vol. 3 Appendix E), independently of
// pmulab's headers.
//
// Which CPUs have it: an AuthenticAMD/HygonGenuine CPU whose CPUID Fn8000_0001_ECX[10]
// (IBS) is set and whose Fn8000_001B_EAX[0] (IBSFFV) is 1 (the simulated Zen 4, and the
// dumps that enumerate it, such as the Granite Ridge one); op sampling with OpSam, fetch
// sampling with FetchSam, IbsOpCntCtl with OpCnt, IbsOpMaxCnt[26:20] with OpCntExt.
//
// What is modelled (docs/sim.md "IBS"):
//  * Op sampling. The periodic op counter is set to IbsOpCurCnt by every WRMSR to IbsOpCtl
//    and counts while IbsOpEn = 1 and IbsOpVal = 0: one per retired instruction (the
//    model's op: one op per instruction) with IbsOpCntCtl = 1, the instruction's core
//    cycles (the cost model's) with IbsOpCntCtl = 0. The op at which it reaches the
//    maximum count (IbsOpMaxCnt << 4, a count of 0 never tags) is tagged: IbsOpRip is its
//    RIP, IbsOpData its cycles (TagToRetCtr), IbsOpData3 says load/store, whether the data
//    cache missed (the cache model's level beyond L1D), the miss latency (the cost model's
//    latency of that level, loads only) and that IbsDcLinAd/IbsDcPhysAd hold the address
//    the executor computed (the first access of the instruction; identity-mapped);
//    IbsOpVal is set, the counter reset, and the interrupt raised.
//  * Fetch sampling likewise, one fetch per retired instruction: IbsFetchLinAd/PhysAd the
//    instruction's address, IbsFetchComp set, IbsIcMiss on the first fetch of its 64-byte
//    line since reset (the model has no other instruction cache), IbsFetchLat
//    kFetchHitLatency or kFetchMissLatency cycles.
//  * IBS_CTL (read-only) names extended LVT entry kLvtOffset with LVTOffsetVal set, as
//    firmware leaves it; SimCpu delivers the interrupt through that entry (an NMI unless
//    masked; the entry is not masked by the delivery).
//  * The data source of a tagged load (sim_memsrc.h): IbsOpData3's DcMiss/L2Miss and
//    IbsOpData2's DataSrc from the level that served it.
//  * L3MissOnly (IbsOpCtl[16], IbsFetchCtl[59], with the Zen 4 extensions): a tagged op
//    that is not a load served by memory (beyond L3 in the cache model) is discarded: no
//    sample, IbsOpVal stays clear, the counter restarts from 0. Fetches never miss L3 in
//    the model (an instruction-cache miss is served by L2), so every tagged fetch is
//    discarded likewise.
//  * Randomisation, from a generator seeded by seed() (pmulab-sim --seed): when the op
//    counter rolls over (a sample), IbsOpCurCnt[6:0] reads random (what Linux's ibs.c
//    says of the hardware; the counter is stopped until software rewrites IbsOpCtl); with
//    IbsRandEn (IbsFetchCtl[57]) a WRMSR that starts the fetch counter (IbsFetchEn set)
//    sets its bits 3:0 to random ones, as does the restart after a discarded fetch.
//  * Reserved bits #GP on WRMSR; IbsBrTarget exists with BrnTrgt, IbsFetchCtlExtd with
//    FetchCtlExtd. Not modelled: TLB bits and latencies, RmtNode/CacheHitSt (0), branch
//    bits.
#pragma once

#include <set>

#include "sim/sim_pmu.h"

namespace sim {

namespace reg {
inline constexpr u32 IBS_FETCH_CTL = 0xC0011030, IBS_FETCH_LINAD = 0xC0011031, IBS_FETCH_PHYSAD = 0xC0011032;
inline constexpr u32 IBS_OP_CTL = 0xC0011033, IBS_OP_RIP = 0xC0011034, IBS_OP_DATA = 0xC0011035;
inline constexpr u32 IBS_OP_DATA2 = 0xC0011036, IBS_OP_DATA3 = 0xC0011037;
inline constexpr u32 IBS_DC_LINAD = 0xC0011038, IBS_DC_PHYSAD = 0xC0011039, IBS_CTL = 0xC001103A;
inline constexpr u32 IBS_BR_TARGET = 0xC001103B, IBS_FETCH_CTL_EXTD = 0xC001103C;
}  // namespace reg

// One retired instruction as the executor saw it (SimCpu::op): what IBS tags.
struct OpInfo {
    u64 rip = 0;
    bool load = false, store = false;
    u64 data_addr = 0;     // its first memory access's linear address
    unsigned served = 0;   // the level that served its load (0: L1D, 1: L2, 2: L3, 3: memory)
    u32 miss_latency = 0;  // the cost model's latency of that level (0: an L1D hit)
};

class IbsUnit {
public:
    static constexpr u32 kLvtOffset = 1;          // IBS_CTL.LVTOffset as the simulated firmware sets it
    static constexpr u32 kFetchHitLatency = 4;    // cycles of an instruction-cache hit
    static constexpr u32 kFetchMissLatency = 16;  // ... and of a miss served by L2 (4 + 12)

    explicit IbsUnit(const CpuidSnapshot& s);
    bool present() const { return features_ != 0; }
    u32 features() const { return features_; }
    bool claims(u32 msr) const;
    // 0 or the fault vector.
    u8 rdmsr(u32 msr, u64* v) const;
    u8 wrmsr(u32 msr, u64 v);
    void poke(u32 msr, u64 v);
    // Op or fetch sampling counts (enabled, no sample pending): the executor must report
    // every instruction.
    bool counting() const;
    // One op retired taking `cycles` core cycles; true when it completed a sample (the
    // interrupt is due).
    bool retire(const OpInfo& op, u64 cycles);
    u32 lvt_offset() const { return kLvtOffset; }
    u64 samples() const { return samples_; }
    // The randomisation's generator (the same seed: the same random bits).
    void seed(u64 s) { rng_ = s; }
    // IbsFetchCtl and IbsOpCtl (SimCpu::pmu_state: what pmulab must restore).
    void state(PmuState* out) const;

private:
    bool tag_op(const OpInfo& op, u64 cycles);
    bool tag_fetch(const OpInfo& op);
    u64 random();
    u32 features_ = 0;
    u64 op_ctl_ = 0, op_rip_ = 0, op_data_ = 0, op_data3_ = 0, dc_lin_ = 0, dc_phys_ = 0;
    u64 fetch_ctl_ = 0, fetch_lin_ = 0, fetch_phys_ = 0, br_target_ = 0, fetch_extd_ = 0;
    u64 op_count_ = 0, fetch_count_ = 0;
    u64 op_data2_ = 0, rng_ = 0;
    u64 samples_ = 0;
    std::set<u64> fetched_lines_;
};

}  // namespace sim
