// A MeasurePlatform for the simulated machine: it "executes" the regions the engine
// generates by decoding the counter instructions in them and performing them on the
// SimMachine's current CPU, so that host tests see the engine and the PMU layer work
// together exactly as on hardware (what is read, in which order, with which WRMSRs).
//
// Decoded (the emitter's own encodings, measure_codegen.cpp):
//   B9 imm32 0F 33                     mov $imm, %ecx; rdpmc
//   B9 imm32 0F 32                     mov $imm, %ecx; rdmsr
//   B9 imm32 B8 imm32 BA imm32 0F 30   mov $msr, %ecx; mov $lo, %eax; mov $hi, %edx; wrmsr
//   0F 31                              rdtsc
//   0F AE E8                           lfence
// The first half of the reads fill RegionFrame::start, the second half ::end.
// Kernel bodies are runs of 0xCC bytes, one per documented instruction; the first
// body byte stands for all copies x loop iterations of the kernel.
//
// Cost model (what the simulated PMU sees, on the current CPU):
//   each decoded instruction: 1 instruction retired (C0.00), 1 core cycle, 1 reference
//                             cycle (the TSC advances by 1), after its effect;
//   the kernel:               copies * loop * instructions of each, at one per cycle.
// So per iteration: instructions = cycles = reference cycles = TSC ticks = the kernel's
// instruction count, and everything around the body cancels between U and 2U.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "app/out.h"
#include "measure/measure.h"
#include "sim/sim_cpu.h"
#include "sim/sim_netburst.h"

namespace simm {

using namespace pmulab;

class SimMeasure final : public MeasurePlatform {
public:
    explicit SimMeasure(sim::SimMachine& m) : m_(m) {}
    ~SimMeasure() { EXPECT_TRUE(live_.empty()) << "pages not freed"; }

    Result<void*> alloc_pages(usize bytes, bool) override {
        void* p = std::aligned_alloc(4096, (bytes + 4095) & ~usize(4095));
        live_[p] = bytes;
        return p;
    }
    void free_pages(void* p, usize bytes) override {
        EXPECT_EQ(live_[p], bytes);
        live_.erase(p);
        std::free(p);
    }
    CodeSpan kernel_body(KernelId id) override {
        static u8 body[64];
        std::memset(body, 0xCC, sizeof body);
        return CodeSpan{body, kernel_info(id).instructions};
    }
    Status irq_mask(IrqMode, IrqSaved* saved) override {
        saved->word[0] = 1;
        masked_ = true;
        return ok_status();
    }
    void irq_restore(const IrqSaved&) override { masked_ = false; }
    void serialize() override {}

    void execute(const Region& region, RegionFrame* frame) override {
        EXPECT_TRUE(masked_);
        ++executions;
        const u8* c = static_cast<const u8*>(region.code);
        usize n = region.size;
        struct Op {
            enum Kind { rdpmc, rdmsr, wrmsr, rdtsc, lfence, body } kind;
            u32 arg = 0;
            u64 value = 0;
        };
        std::vector<Op> ops;
        auto imm = [&](usize at) {
            return u32(c[at]) | (u32(c[at + 1]) << 8) | (u32(c[at + 2]) << 16) | (u32(c[at + 3]) << 24);
        };
        for (usize i = 0; i < n;) {
            if (i + 7 <= n && c[i] == 0xB9 && c[i + 5] == 0x0F && (c[i + 6] == 0x33 || c[i + 6] == 0x32)) {
                ops.push_back({c[i + 6] == 0x33 ? Op::rdpmc : Op::rdmsr, imm(i + 1)});
                i += 7;
            } else if (i + 17 <= n && c[i] == 0xB9 && c[i + 5] == 0xB8 && c[i + 10] == 0xBA && c[i + 15] == 0x0F &&
                       c[i + 16] == 0x30) {
                ops.push_back({Op::wrmsr, imm(i + 1), u64(imm(i + 6)) | (u64(imm(i + 11)) << 32)});
                i += 17;
            } else if (i + 2 <= n && c[i] == 0x0F && c[i + 1] == 0x31) {
                ops.push_back({Op::rdtsc});
                i += 2;
            } else if (i + 3 <= n && c[i] == 0x0F && c[i + 1] == 0xAE && c[i + 2] == 0xE8) {
                ops.push_back({Op::lfence});
                i += 3;
            } else if (c[i] == 0xCC) {
                ops.push_back({Op::body});
                while (i < n && c[i] == 0xCC) ++i;
            } else {
                ++i;
            }
        }
        usize reads = 0;
        for (const Op& o : ops) reads += o.kind == Op::rdpmc || o.kind == Op::rdmsr || o.kind == Op::rdtsc;
        EXPECT_EQ(reads % 2, 0u);
        usize half = reads / 2, k = 0;
        sim::SimCpu& cpu = m_.cpu(m_.current_cpu());
        auto store = [&](u64 v) {
            if (k < half) frame->start[k] = v;
            else if (k - half < kMaxReads) frame->end[k - half] = v;
            ++k;
        };
        auto retire = [&](u64 count) {
            if (cpu.netburst()) {
                // NetBurst: one non-bogus, untagged instruction and uop retired per cycle.
                sim::nb_run(cpu, count,
                            {{sim::nb::kInstrRetired, sim::nb::NBOGUSNTAG, 1},
                             {sim::nb::kUopsRetired, sim::nb::NBOGUS, 1}});
            } else {
                cpu.run(count, {{0xC0, 0x00, 1}});
            }
            cpu.ref_cycles(count);
        };
        for (const Op& o : ops) {
            switch (o.kind) {
                case Op::rdpmc: {
                    Result<u64> r = m_.rdpmc(o.arg);
                    EXPECT_TRUE(r.ok()) << "generated RDPMC faulted: " << r.error().msg;
                    store(r.ok() ? r.value() : 0);
                    break;
                }
                case Op::rdmsr: {
                    Result<u64> r = m_.rdmsr(o.arg);
                    EXPECT_TRUE(r.ok()) << "generated RDMSR faulted: " << r.error().msg;
                    store(r.ok() ? r.value() : 0);
                    break;
                }
                case Op::rdtsc: store(m_.rdtsc()); break;
                case Op::wrmsr: {
                    Status s = m_.wrmsr(o.arg, o.value);
                    EXPECT_TRUE(s.ok()) << "generated WRMSR faulted: " << s.error().msg;
                    break;
                }
                case Op::lfence: break;
                case Op::body: retire(region.copies * region.loop * region.body_len); continue;
            }
            retire(1);
        }
    }

    u64 executions = 0;

private:
    sim::SimMachine& m_;
    std::map<void*, usize> live_;
    bool masked_ = false;
};

// A Platform over a SimMachine with the SimMeasure engine services.
class SimPlatform final : public Platform {
public:
    explicit SimPlatform(sim::SimMachine& m) : m_(m), mp_(m) {}
    Hw& hw() override { return m_; }
    void write(StrView text) override { out.append(text.ptr, text.len); }
    MeasurePlatform* measure() override { return &mp_; }
    // A firmware timer over the simulated TSC: `stall_ticks_per_us` ticks per microsecond
    // (0: no timer).
    Status stall_us(u32 us) override {
        if (!stall_ticks_per_us) return Error::make(Errc::unsupported, "no firmware timer (simulated)");
        sim::SimCpu& c = m_.cpu(m_.current_cpu());
        c.set_tsc(c.tsc() + u64(us) * stall_ticks_per_us);
        return ok_status();
    }
    const char* stall_source() override { return "sim_stall"; }
    const char* stall_what() override { return "the simulated firmware timer"; }
    SimMeasure& engine() { return mp_; }
    std::string out;
    u64 stall_ticks_per_us = 0;

private:
    sim::SimMachine& m_;
    SimMeasure mp_;
};

}  // namespace simm
