#include "x86/hw.h"

namespace pmulab {

const char* vector_name(u8 vector) {
    switch (vector) {
        case kVectorUD: return "#UD (invalid opcode)";
        case kVectorGP: return "#GP (general protection)";
        default: return "unexpected exception";
    }
}

Error msr_fault_error(const char* op, u32 msr, u64 value, u8 vector) {
    Error e;
    if (str_eq(op, "WRMSR"))
        e = Error::make(Errc::fault, "WRMSR 0x%x <- 0x%llx raised %s: the CPU rejects this MSR or value", msr,
                        (unsigned long long)value, vector_name(vector));
    else
        e = Error::make(Errc::fault, "%s 0x%x raised %s: the CPU does not implement this MSR", op, msr,
                        vector_name(vector));
    e.vector = vector;
    return e;
}

Error pmc_fault_error(u32 index, u8 vector) {
    Error e = Error::make(Errc::fault, "RDPMC 0x%x raised %s", index, vector_name(vector));
    e.vector = vector;
    return e;
}

}  // namespace pmulab
