// The slice-lookup job the C-Box and CHA tests share (`run --cbox-lookups`, run_cbox.cpp):
// two lines, r14+0x40 and r14+0x1000040, each flushed and loaded 8 times per copy, and
// the check that every lookup lands in the slice the simulator's own hash gives.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/sim_slice.h"
#include "support/sim_cmd.h"

namespace simm {

// clflush [r14+0x40]; mfence; mov rcx, [r14+0x40]  /  the same at r14+0x1000040.
inline constexpr char kSliceAt40[] = "410faebe400000000faef0498b8e40000000";
inline constexpr char kSliceAt1000040[] = "410faebe400000010faef0498b8e40000001";

// Both lines on CPU 0 in basic mode (8 copies, 3 counted runs of each version), JSON.
inline Cmd run_two_lines(SimPlatform& p) {
    return run_line(p, std::string("--json run --cpu 0 --code ") + kSliceAt40 + " --name at40 --code " +
                           kSliceAt1000040 +
                           " --name at1000040 --events tsc --cbox-lookups --basic --unroll 8 --reps 3 --warmup 1" +
                           " --r14-size 64M");
}

// Each line's record: `event`, `boxes` units, 6 counted runs (3 of each version, the first
// of each left out), and all 24 lookups in the hash's slice of the line, none elsewhere.
// R14 is the middle of the area whose start is the result record's r14.
inline void expect_lookups_in_hash_slice(const Cmd& c, const char* event, pmulab::u32 boxes) {
    std::vector<pmutest::Json> res = results(c), cb = of_type(c, "cbox_lookups");
    ASSERT_EQ(res.size(), 2u) << c.out;
    ASSERT_EQ(cb.size(), 2u) << c.out;
    const pmulab::u64 offs[2] = {0x40, 0x1000040};
    for (int i = 0; i < 2; ++i) {
        const pmutest::Json& r = cb[size_t(i)];
        EXPECT_EQ(r["event"].s(), event);
        EXPECT_EQ(r["boxes"].u(), boxes);
        EXPECT_EQ(r["runs"].u(), 6u);
        pmulab::u32 want = sim::llc_slice(res[size_t(i)]["r14"].u() + (32u << 20) + offs[i], boxes);
        EXPECT_EQ(r["slice"].u(), want) << r["bench"].s();
        for (pmulab::u32 b = 0; b < boxes; ++b) EXPECT_EQ(r["lookups"][b].u(), b == want ? 24u : 0u) << b;
    }
}

}  // namespace simm
