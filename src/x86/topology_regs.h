// Typed CPUID registers of the processor topology: Intel's extended topology leaves 0BH and
// 1FH, the legacy counts of leaves 01H and 04H, and AMD's Fn8000_0008 ECX and Fn8000_001E.
//
// References: Intel SDM Vol. 2A, CPUID, "Extended Topology Enumeration Leaf" (0BH) and "V2
// Extended Topology Enumeration Leaf" (1FH); SDM Vol. 3A §10.9 "Programming Considerations
// for Hardware Multi-Threading Capable Processors" (§10.9.2 hierarchical mapping of the
// extended topology leaf, §10.9.3 the legacy leaves 01H/04H); AMD APM Vol. 3 Appendix E.4.7
// (Fn8000_0008 ECX "Size Identifiers"), E.4.14 (Fn8000_001E "Processor Topology
// Information") and E.5 "Multiple Processor Calculation".
#pragma once

#include "base/bits.h"

namespace pmulab::regs {

// Leaf 0BH / 1FH EAX: the shift of the x2APIC ID to the next level's ID.
class TopoLeafEax : public RegValue<TopoLeafEax> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(TopoLeafEax, shift, 4, 0)
};
static_assert(TopoLeafEax::shift_field::mask == 0x1Full);

// Leaf 0BH / 1FH EBX: logical processors at this level (informational, not for IDs).
class TopoLeafEbx : public RegValue<TopoLeafEbx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(TopoLeafEbx, logical, 15, 0)
};
static_assert(TopoLeafEbx::logical_field::mask == 0xFFFFull);

// Leaf 0BH / 1FH ECX: the sub-leaf echoed and the level type (0 invalid, 1 SMT, 2 core,
// 3 module, 4 tile, 5 die, 6 die group).
enum : u32 { kTopoInvalid = 0, kTopoSmt = 1, kTopoCore = 2 };
class TopoLeafEcx : public RegValue<TopoLeafEcx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(TopoLeafEcx, level_number, 7, 0)
    PMULAB_REG_FIELD(TopoLeafEcx, level_type, 15, 8)
};
static_assert(TopoLeafEcx::level_type_field::mask == 0xFF00ull);
// EDX is the whole x2APIC ID of the logical processor.

// Leaf 01H EBX: the initial APIC ID and the addressable logical processor IDs per package
// (valid when 01H:EDX[28] HTT is set).
class Leaf1Ebx : public RegValue<Leaf1Ebx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(Leaf1Ebx, logical_ids, 23, 16)
    PMULAB_REG_FIELD(Leaf1Ebx, initial_apic_id, 31, 24)
};
static_assert(Leaf1Ebx::logical_ids_field::mask == 0x00FF0000ull);
static_assert(Leaf1Ebx::initial_apic_id_field::mask == 0xFF000000ull);
inline constexpr unsigned kLeaf1EdxHtt = 28;

// Fn8000_0008 ECX: NC (threads in the package minus 1) and ApicIdSize (the APIC ID bits of
// the thread within the package; 0: derive it from NC).
class AmdSizeEcx : public RegValue<AmdSizeEcx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdSizeEcx, nc, 7, 0)
    PMULAB_REG_FIELD(AmdSizeEcx, apic_id_size, 15, 12)
};
static_assert(AmdSizeEcx::nc_field::mask == 0xFFull);
static_assert(AmdSizeEcx::apic_id_size_field::mask == 0xF000ull);

// Fn8000_001E EBX: the core (compute unit) ID and the threads per core minus 1.
class AmdTopoEbx : public RegValue<AmdTopoEbx> {
public:
    using RegValue::RegValue;
    PMULAB_REG_FIELD(AmdTopoEbx, core_id, 7, 0)
    PMULAB_REG_FIELD(AmdTopoEbx, threads_per_core, 15, 8)  // minus 1
};
static_assert(AmdTopoEbx::threads_per_core_field::mask == 0xFF00ull);
// Fn8000_0001 ECX[22] TopologyExtensions: Fn8000_001E exists.
inline constexpr unsigned kAmdTopologyExtensions = 22;

}  // namespace pmulab::regs
