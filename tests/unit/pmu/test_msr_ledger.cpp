// The MSR ledger (pmu/msr_ledger.h) on its own, against a plain MSR store: the restore
// order (disable pass, then counter, event_select, control, status, global), gating of
// counter writes, shadow and written tracking, the first error kept while restore goes
// on, idempotence, the legacy-write and lost-status reports, and the capacity limit.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pmu/msr_ledger.h"

using namespace pmulab;

namespace {

// MSRs as a map; every access logged as "R:addr" / "W:addr=value" ("!" when faulted).
class StoreHw final : public Hw {
public:
    std::map<u32, u64> msr;
    std::vector<std::string> log;
    std::set<u32> fault_rd, fault_wr;  // addresses whose RDMSR / WRMSR faults
    int fail_write_k = 0;              // the k-th WRMSR from now faults (once); 0: none

    CpuidRegs cpuid(u32, u32) override { return CpuidRegs(); }
    Result<u64> rdmsr(u32 m) override {
        if (fault_rd.count(m) || !msr.count(m)) {
            log.push_back(entry("R", m) + "!");
            return fault("RDMSR", m);
        }
        log.push_back(entry("R", m));
        return msr[m];
    }
    Status wrmsr(u32 m, u64 v) override {
        bool injected = fail_write_k > 0 && --fail_write_k == 0;
        if (injected || fault_wr.count(m) || !msr.count(m)) {
            log.push_back(entry("W", m, v) + "!");
            return fault("WRMSR", m);
        }
        log.push_back(entry("W", m, v));
        msr[m] = v;
        return ok_status();
    }
    Result<u64> rdpmc(u32 i) override { return fault("RDPMC", i); }
    u64 rdtsc() override { return 0; }
    u32 cpu_count() override { return 1; }
    u32 current_cpu() override { return 0; }
    Result<CpuTopology> topology(u32) override { return CpuTopology(); }
    Status run_on_cpu(u32, CpuFn fn, void* ctx) override {
        fn(ctx);
        return ok_status();
    }

    std::vector<std::string> writes() const {
        std::vector<std::string> w;
        for (const std::string& s : log)
            if (s[0] == 'W') w.push_back(s.substr(2));
        return w;
    }

private:
    static std::string entry(const char* op, u32 m, u64 v = 0) {
        char b[64];
        if (op[0] == 'W') std::snprintf(b, sizeof b, "%s:0x%x=0x%llx", op, m, (unsigned long long)v);
        else std::snprintf(b, sizeof b, "%s:0x%x", op, m);
        return b;
    }
    static Error fault(const char* what, u32 m) {
        Error e = Error::make(Errc::fault, "%s 0x%X raised #GP", what, m);
        e.vector = 13;
        return e;
    }
};

// A miniature PMU: global enable G (bit 0-1 = counters), status S with clear C and set T,
// two counters with event selects (EN = bit 22), a control register X.
constexpr u32 G = 0x10, S = 0x11, C = 0x12, T = 0x13, X = 0x20;
constexpr u32 SEL0 = 0x30, SEL1 = 0x31, CTR0 = 0x40, CTR1 = 0x41, ACTR0 = 0x50;
constexpr u64 EN = u64(1) << 22;

void fill(StoreHw& hw) {
    hw.msr = {{G, 0x3},          {S, 0x1},     {C, 0},         {T, 0},         {X, 0x7},
              {SEL0, EN | 0xC0}, {SEL1, 0x3C}, {CTR0, 0x1111}, {CTR1, 0x2222}, {ACTR0, 0}};
}

// Saved deliberately out of restore order: the phases, not the save order, decide.
Status save_all(MsrLedger& l, bool legacy = false) {
    PMULAB_TRY(l.save(MsrReg::global(G).disabled_by(~u64(0)).disabled_always()));
    PMULAB_TRY(l.save(MsrReg::status(S, C, legacy ? 0 : T, 0x3)));
    PMULAB_TRY(l.save(MsrReg::control(X)));
    PMULAB_TRY(l.save(MsrReg::event_select(SEL0).disabled_by(EN)));
    MsrReg c0 = MsrReg::counter(CTR0).gated_by(SEL0);
    if (legacy) c0.legacy_write(40, 0);
    else c0.written_at(ACTR0);
    PMULAB_TRY(l.save(c0));
    PMULAB_TRY(l.save(MsrReg::event_select(SEL1).disabled_by(EN)));
    PMULAB_TRY(l.save(MsrReg::counter(CTR1).gated_by(SEL1)));
    l.arm();
    return ok_status();
}

TEST(MsrLedger, SavesTracksShadowAndWrittenAndWritesThrough) {
    StoreHw hw;
    fill(hw);
    FixedMsrLedger<16> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(save_all(l).ok());
    EXPECT_TRUE(l.armed());
    EXPECT_EQ(l.size(), 7u);
    EXPECT_EQ(hw.log, (std::vector<std::string>{"R:0x10", "R:0x11", "R:0x20", "R:0x30", "R:0x40", "R:0x31", "R:0x41"}));
    EXPECT_TRUE(hw.writes().empty());
    EXPECT_EQ(l.shadow(SEL0), EN | 0xC0);
    EXPECT_EQ(l.saved_value(CTR1), 0x2222u);
    EXPECT_FALSE(l.has(0x99));
    EXPECT_EQ(l.shadow(0x99), 0u);  // not saved: 0
    EXPECT_FALSE(l.wrote_any());

    ASSERT_TRUE(l.write(SEL0, 0xC0).ok());
    EXPECT_EQ(l.shadow(SEL0), 0xC0u);
    EXPECT_EQ(l.saved_value(SEL0), EN | 0xC0);
    EXPECT_TRUE(l.written(SEL0));
    // A write at the counter's alias marks the counter.
    ASSERT_TRUE(l.write(ACTR0, 5).ok());
    EXPECT_TRUE(l.written(CTR0));
    EXPECT_FALSE(l.written(CTR1));
    // A register outside the ledger is written as is.
    ASSERT_TRUE(l.write(C, 1).ok());
    EXPECT_TRUE(l.wrote_any());
    // A faulted write changes nothing.
    hw.fault_wr.insert(X);
    EXPECT_EQ(l.write(X, 0).error().code, Errc::fault);
    EXPECT_EQ(l.shadow(X), 0x7u);
    EXPECT_FALSE(l.written(X));
}

TEST(MsrLedger, RestoresInPhaseOrderAndIsIdempotent) {
    StoreHw hw;
    fill(hw);
    std::map<u32, u64> before = hw.msr;
    FixedMsrLedger<16> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(save_all(l).ok());
    // What a program / run does: counting off, counters written, selects changed.
    ASSERT_TRUE(l.write(G, 0).ok());
    ASSERT_TRUE(l.write(SEL0, 0xC4).ok());
    ASSERT_TRUE(l.write(ACTR0, 0x99).ok());
    ASSERT_TRUE(l.write(X, 0).ok());
    ASSERT_TRUE(l.write(G, 0x1).ok());  // start
    hw.msr[CTR0] = 0x1234;              // counted
    hw.msr[S] = 0x2;                    // counter 1 overflowed, counter 0's flag cleared
    hw.log.clear();
    RestoreReport rep;
    rep.gp_counters_inexact = 7;
    ASSERT_TRUE(l.restore(&rep).ok());
    EXPECT_EQ(hw.writes(), (std::vector<std::string>{
                               "0x10=0x0",       // disable pass: global enable, always
                               "0x50=0x1111",    // counter 0 (written, gate off) through its alias
                               "0x30=0x4000c0",  // event selects
                               "0x20=0x7",       // controls
                               "0x12=0x2",       // status: bit 1 cleared ...
                               "0x13=0x1",       // ... bit 0 set again
                               "0x10=0x3",       // global enable last
                           }));
    EXPECT_EQ(rep.gp_counters_inexact, 0u);
    EXPECT_EQ(rep.status_bits_lost, 0u);
    EXPECT_FALSE(l.armed());
    // Everything the ledger owns is as before (the alias, the status clear/set MSRs and
    // the counted value aside).
    for (u32 m : {G, X, SEL0, SEL1, CTR1}) EXPECT_EQ(hw.msr[m], before[m]) << std::hex << m;
    EXPECT_EQ(hw.msr[ACTR0], 0x1111u);

    // Idempotent: a second restore writes nothing and reports nothing.
    hw.log.clear();
    ASSERT_TRUE(l.restore(&rep).ok());
    EXPECT_TRUE(hw.log.empty());
    EXPECT_EQ(rep.status_bits_lost, 0u);
}

TEST(MsrLedger, DisablePassClearsSetEnableBitsAndGatesCounters) {
    StoreHw hw;
    fill(hw);
    FixedMsrLedger<16> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(save_all(l).ok());
    // SEL0 still enabled (shadow EN set); both counters written.
    ASSERT_TRUE(l.write(CTR1, 0).ok());
    ASSERT_TRUE(l.write(ACTR0, 0).ok());
    ASSERT_TRUE(l.write(SEL1, EN | 0x3C).ok());
    hw.log.clear();
    ASSERT_TRUE(l.restore().ok());
    EXPECT_EQ(hw.writes(), (std::vector<std::string>{
                               "0x10=0x0",     // global enable
                               "0x30=0xc0",    // SEL0: EN cleared (it was set)
                               "0x31=0x3c",    // SEL1: EN cleared (pmulab set it)
                               "0x50=0x1111",  // counters, in save order
                               "0x41=0x2222",
                               "0x30=0x4000c0",  // SEL0 back (its shadow differs now)
                               "0x10=0x3",       // global enable last
                           }));
}

TEST(MsrLedger, AFaultAtEveryWriteKeepsTheFirstErrorAndGoesOn) {
    // Restore once without faults to count its writes, then fail each in turn.
    size_t n = 0;
    for (size_t k = 0; k == 0 || k <= n; ++k) {
        StoreHw hw;
        fill(hw);
        FixedMsrLedger<16> l;
        l.bind(&hw);
        l.begin();
        ASSERT_TRUE(save_all(l).ok());
        ASSERT_TRUE(l.write(G, 0).ok());
        ASSERT_TRUE(l.write(SEL0, 0xC4).ok());
        ASSERT_TRUE(l.write(ACTR0, 0x99).ok());
        ASSERT_TRUE(l.write(CTR1, 0x98).ok());
        ASSERT_TRUE(l.write(X, 0).ok());
        hw.log.clear();
        hw.fail_write_k = int(k);
        Status s = l.restore();
        std::vector<std::string> w = hw.writes();
        if (k == 0) {
            ASSERT_TRUE(s.ok());
            n = w.size();
            ASSERT_EQ(n, 6u);  // G=0, ACTR0, CTR1, SEL0, X, G
            continue;
        }
        ASSERT_FALSE(s.ok()) << k;
        EXPECT_EQ(s.error().code, Errc::fault);
        // The first fault is the one returned; the writes after it are still made.
        std::string addr = w[k - 1].substr(0, w[k - 1].find('='));  // the faulted write
        ASSERT_EQ(w[k - 1].back(), '!') << k;
        EXPECT_NE(std::string(s.error().msg).find(addr), std::string::npos) << k << " " << s.error().msg;
        EXPECT_EQ(w.size(), n) << k;
        EXPECT_EQ(w.back(), k == n ? "0x10=0x3!" : "0x10=0x3") << k;  // the global enable still comes back last
        EXPECT_FALSE(l.armed());
    }
}

TEST(MsrLedger, AFailedDisableLeavesItsCounterAlone) {
    StoreHw hw;
    fill(hw);
    FixedMsrLedger<16> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(save_all(l).ok());
    ASSERT_TRUE(l.write(ACTR0, 0x99).ok());  // SEL0 still has EN set
    hw.log.clear();
    hw.fault_wr.insert(SEL0);
    Status s = l.restore();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(std::string(s.error().msg).find("0x30"), std::string::npos);
    // No counter write (it might still count), the global enable back as always.
    EXPECT_EQ(hw.writes(), (std::vector<std::string>{"0x10=0x0", "0x30=0xc0!", "0x10=0x3"}));
}

TEST(MsrLedger, ReportsLegacyWritesAndStatusBitsThatCannotBeSet) {
    StoreHw hw;
    fill(hw);
    hw.msr[CTR0] = 0x80000000;  // a 32-bit sign-extended write gives 0xFF80000000 on 40 bits
    FixedMsrLedger<16> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(save_all(l, /*legacy=*/true).ok());
    ASSERT_TRUE(l.write(G, 0).ok());
    ASSERT_TRUE(l.write(CTR0, 0).ok());
    hw.msr[S] = 0;
    RestoreReport rep;
    ASSERT_TRUE(l.restore(&rep).ok());
    EXPECT_EQ(rep.gp_counters_inexact, 1u);
    EXPECT_EQ(rep.status_bits_lost, 1u);
}

TEST(MsrLedger, RereadBeforeDisableSeesHardwareFlags) {
    StoreHw hw;
    hw.msr = {{SEL0, 0}, {CTR0, 0}};
    FixedMsrLedger<4> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(l.save(MsrReg::control(SEL0).disabled_by(EN).reread_first()).ok());
    ASSERT_TRUE(l.save(MsrReg::counter(CTR0).gated_by(SEL0)).ok());
    l.arm();
    ASSERT_TRUE(l.write(SEL0, EN).ok());
    ASSERT_TRUE(l.write(CTR0, 5).ok());
    hw.msr[SEL0] = EN | (u64(1) << 31);  // the hardware set a flag since
    hw.log.clear();
    ASSERT_TRUE(l.restore().ok());
    EXPECT_EQ(hw.log, (std::vector<std::string>{"R:0x30", "W:0x30=0x80000000", "W:0x40=0x0", "W:0x30=0x0"}));
}

TEST(MsrLedger, NothingWrittenMeansNothingRestoredAndSaveFaultsRecordNothing) {
    StoreHw hw;
    fill(hw);
    FixedMsrLedger<16> l;
    l.bind(&hw);
    EXPECT_TRUE(l.restore().ok());  // never saved: nothing to do
    l.begin();
    ASSERT_TRUE(save_all(l).ok());
    hw.log.clear();
    ASSERT_TRUE(l.restore().ok());
    EXPECT_TRUE(hw.log.empty());  // no write since save: not even the status is read

    l.begin();
    hw.fault_rd.insert(X);
    Status s = l.save(MsrReg::control(X));
    EXPECT_EQ(s.error().code, Errc::fault);
    EXPECT_FALSE(l.has(X));
    // A register saved twice keeps its first entry.
    ASSERT_TRUE(l.save(MsrReg::event_select(SEL0)).ok());
    hw.msr[SEL0] = 0;
    ASSERT_TRUE(l.save(MsrReg::event_select(SEL0)).ok());
    EXPECT_EQ(l.size(), 1u);
    EXPECT_EQ(l.saved_value(SEL0), EN | 0xC0);
}

TEST(MsrLedger, CapacityIsFixed) {
    StoreHw hw;
    fill(hw);
    FixedMsrLedger<2> l;
    l.bind(&hw);
    l.begin();
    ASSERT_TRUE(l.save(MsrReg::control(X)).ok());
    ASSERT_TRUE(l.save(MsrReg::event_select(SEL0)).ok());
    Status s = l.save(MsrReg::event_select(SEL1));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, Errc::internal);
    EXPECT_EQ(l.size(), 2u);
    // begin() makes room again.
    l.begin();
    EXPECT_EQ(l.size(), 0u);
    EXPECT_TRUE(l.save(MsrReg::event_select(SEL1)).ok());
}

}  // namespace
