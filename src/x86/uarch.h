// Microarchitectures by family and model, where a PMU feature depends on them rather than
// on an enumeration bit: the one table both pmulab (measure/topdown.cpp) and the simulator
// (sim/sim_topdown.cpp) read. Sources: Linux arch/x86/events/intel/core.c intel_pmu_init
// (Intel models), arch/x86/kernel/cpu/amd.c bsp_init_amd (AMD Zen generations).
#pragma once

#include "base/base.h"

namespace pmulab {

// Golden Cove and later P cores (IA32_PERF_METRICS bytes 4-7, Linux num_topdown_events = 8):
// Sapphire/Emerald/Granite Rapids, Alder/Raptor/Meteor/Arrow Lake (incl. Arrow Lake-U, B5H),
// Lunar/Panther/Wildcat Lake (D5H).
bool intel_topdown_l2_model(u32 family, u32 model);
// Skylake-class cores (4 slots per cycle; IDQ_UOPS_NOT_DELIVERED, UOPS_ISSUED, UOPS_RETIRED,
// INT_MISC exist): Skylake, Kaby/Coffee/Whiskey/Comet Lake, Skylake-SP/Cascade/Cooper Lake.
bool intel_skylake_class_model(u32 family, u32 model);

// E-core microarchitectures with TopDown events of their own.
enum class AtomUarch : u8 { none, gracemont, crestmont, skymont };
// The E cores of family 6 model `model`: Gracemont (Alder/Raptor Lake, Alder Lake-N),
// Crestmont (Meteor Lake, Arrow Lake-U B5H, Sierra Forest, Grand Ridge; Arrow Lake's low-power
// E cores, native model ID 2), Skymont (Lunar Lake, Arrow Lake native model ID 3; Darkmont:
// Panther Lake, Wildcat Lake D5H, Clearwater Forest). `native_model_id`: CPUID.1AH:EAX[23:0].
AtomUarch intel_atom_uarch(u32 family, u32 model, u32 native_model_id);
// Atom-only parts, whose every core is an E core: Alder Lake-N, Sierra Forest, Grand Ridge,
// Clearwater Forest.
bool intel_atom_only_model(u32 family, u32 model);

// The AMD Zen generation of family 17h/19h/1Ah model `model` (Linux bsp_init_amd): 1-6, or 0
// where the model is not in Linux's table. Zen 4: 19h models 10h-1Fh, 60h-AFh; Zen 5: 1Ah
// models 00h-2Fh, 40h-4Fh, 60h-7Fh; Zen 6: 1Ah models 50h-5Fh, 80h-AFh, C0h-EFh.
unsigned amd_zen_generation(u32 family, u32 model);

}  // namespace pmulab
