// Where a command's numbers come from, for the meta record (records.h) and the report
// (docs/report.md "Where the numbers come from"): real hardware, a virtual machine (which
// hypervisor; under QEMU TCG whether the TSC counts instructions, -icount, and its shift)
// or pmulab-sim's model.
#pragma once

#include "app/platform.h"

namespace pmulab {

struct Provenance {
    // "hardware", "virtual_machine" (CPUID.01H:ECX[31]) or "simulated" (pmulab-sim).
    const char* source = "hardware";
    char hypervisor_vendor[13] = {};  // CPUID 4000_0000H, "" without a hypervisor
    bool tcg = false;                 // QEMU's TCG ("TCGTCGTCGTCG"): no PMU, the TSC emulated
    // TCG only: the TSC advanced exactly 2^shift ticks per instruction of the nop kernel in
    // every run (QEMU -icount shift=N), measured once per boot; -1 when it did not (TCG
    // without -icount) or could not be measured.
    i32 icount_shift = -1;
};

Provenance provenance(Platform& p);
// "source", "tcg" and "icount_shift" (null unless measured) into an open object.
void provenance_json(JsonWriter& w, const Provenance& pr);
// One line of text: "hardware", "virtual machine (TCGTCGTCGTCG, -icount 7)", "simulated: ...".
void put_provenance(StrBuf& b, const Provenance& pr, const char* simulated_machine);

}  // namespace pmulab
