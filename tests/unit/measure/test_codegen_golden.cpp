// The generated harness, byte for byte: an FNV-1a hash of emit_region's output for a
// matrix of specs (reads, start/stop writes, markers, --no-mem, loop, carry, blocks,
// alignment, serialisation). Pinned when emit_region was split into steps, so that a
// refactoring of the code generator shows any change in the code it generates.
#include <gtest/gtest.h>

#include "measure/measure.h"

using namespace pmulab;

namespace {

ReadGroup make_group(unsigned nreads, bool writes) {
    ReadGroup g;
    for (unsigned i = 0; i < nreads; ++i) {
        CounterRead r;
        r.kind = i == 0 ? CounterAccess::rdtsc : (i % 2 ? CounterAccess::rdpmc : CounterAccess::rdmsr);
        r.index = i == 0 ? 0 : (i % 2 ? 0x40000000u + i : 0xC1u + i);
        r.width = i == 0 ? 64 : 48;
        g.reads.push(r);
    }
    if (writes) {
        g.start_writes.push(MsrValue{0x38F, 0x70000000Full});
        g.stop_writes.push(MsrValue{0x38F, 0});
    }
    return g;
}

u64 region_hash(const RegionSpec& s, RegionLayout* lay) {
    Vec<u8> out;
    Result<RegionLayout> r = emit_region(s, &out);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return 0;
    *lay = r.value();
    return fnv1a64(out.data(), out.size());
}

// body: add %rbx,%rax; with markers: a pause/resume pair around a nop.
const u8 kAdd[] = {0x48, 0x01, 0xD8};
const u8 kMarked[] = {0x48, 0x01, 0xD8, 0x04, 0x3F, 0x81, 0xC2, 0xB1, 0x13, 0xB5, 0xF0, 0x90,
                      0x04, 0x3F, 0x81, 0xC2, 0xB1, 0x13, 0xB5, 0xE0, 0x48, 0x01, 0xD8};
const u8 kInit[] = {0x31, 0xC0};
const u8 kLate[] = {0x31, 0xDB};

struct Case {
    const char* name;
    u64 hash;
    usize code_size, body_offset, exit_offset;
};

TEST(CodegenGolden, RegionBytesStayTheSame) {
    ReadGroup one = make_group(1, false), four = make_group(4, true);
    RegionSpec specs[8];
    specs[0].body = kAdd, specs[0].body_len = 3, specs[0].copies = 10, specs[0].group = &one;
    specs[1] = specs[0], specs[1].group = &four, specs[1].loop = true, specs[1].serialize = SerializeMode::cpuid;
    specs[2] = specs[1], specs[2].no_mem = true, specs[2].no_mem_loop = 100;
    specs[3] = specs[1], specs[3].body = kMarked, specs[3].body_len = sizeof kMarked, specs[3].marker_pad_copies = 10;
    specs[4] = specs[1], specs[4].init = CodeSpan{kInit, 2}, specs[4].late_init = CodeSpan{kLate, 2};
    specs[4].align_offset = 17, specs[4].drain_frontend = true, specs[4].carry = (1u << kRsi) | (1u << kR12);
    specs[5].init = CodeSpan{kInit, 2};  // a one-time-init region
    specs[6] = specs[0], specs[6].copies = 0, specs[6].marker_pad_copies = 0;
    specs[7] = specs[3], specs[7].copies = 20, specs[7].marker_pad_copies = 0, specs[7].group = &one;
    // The values of the code generator since the start writes moved after init (issue #22:
    // the SLOTS/PERF_METRICS reset right before the start reads); sizes and offsets as
    // before the split into steps (the alignment fill absorbs the move).
    const Case want[8] = {
        {"plain", 0x151E3BAEDB1C12C0ull, 394, 256, 340},
        {"four reads, loop, cpuid", 0x7625D633B09CFC84ull, 618, 320, 480},
        {"no-mem", 0xE1B6FC999081A6C8ull, 616, 256, 478},
        {"markers", 0xA86626A9F6394785ull, 7302, 384, 7136},
        {"blocks, carry, align", 0x02D9DC9F2CC0D8CDull, 2566, 2257, 2428},
        {"one-time-init", 0x89F21BFFB5CFB414ull, 275, 192, 256},
        {"no copies", 0x50532C31E2281210ull, 394, 256, 340},
        {"markers, long", 0x776CC46FE98567CEull, 4563, 256, 4502},
    };
    for (unsigned i = 0; i < 8; ++i) {
        RegionLayout lay;
        u64 h = region_hash(specs[i], &lay);
        EXPECT_EQ(h, want[i].hash) << want[i].name;
        EXPECT_EQ(lay.code_size, want[i].code_size) << want[i].name;
        EXPECT_EQ(lay.body_offset, want[i].body_offset) << want[i].name;
        EXPECT_EQ(lay.exit_offset, want[i].exit_offset) << want[i].name;
    }
}

}  // namespace
