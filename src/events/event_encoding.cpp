// An Event's encodings: the IA32_PERFEVTSELx and IA32_FIXED_CTR_CTRL fields it programs,
// and its nanoBench-style text (put_event_encoding); see events.h.
#include "events/event_terms.h"
#include "events/named_events.h"

#include "x86/netburst_regs.h"

namespace pmulab {

regs::PerfEvtSel Event::perfevtsel() const {
    regs::PerfEvtSel v;
    v.set_event_select(event_select & 0xFF).set_umask(umask).set_usr(usr).set_os(os).set_edge(edge);
    v.set_any_thread(intel.any).set_inv(inv).set_cmask(cmask).set_eq(intel.eq).set_umask2(intel.umask2);
    return v;
}

u64 Event::fixed_ctrl_group() const {
    regs::FixedCtrCtrl f;
    f.set_os(0, os).set_usr(0, usr).set_any_thread(0, intel.any);
    return f.group(0);
}

void put_event_encoding(StrBuf& out, const Event& e) {
    if (e.kind == EventKind::tsc) {
        out.put("tsc");
        return;
    }
    if (e.dialect == EventDialect::netburst) {
        netburst::put_event_name(out, unsigned(e.netburst.event), e.netburst.mask);
        if (e.usr != e.os) out.put(e.usr ? ":u" : ":k");
        return;
    }
    // The head: AMD's 12-bit selects in three digits; fixed-counter events name their
    // counter, then the GP equivalent they fall back to.
    if (spec::is_amd(e.dialect)) {
        if (e.kind == EventKind::fixed) {
            out.put(amd_fixed_like_name(e.fixed_counter));
            if (!e.gp_equivalent) return;
            out.put('=');
        }
        out.printf("%03X.%02X", unsigned(e.event_select), unsigned(e.umask));
    } else {
        if (e.kind == EventKind::fixed) out.printf("FIXED_CTR%d=", e.fixed_counter);
        out.printf("%02X.%02X", unsigned(e.event_select), unsigned(e.umask));
    }
    // The modifiers, in one order for both vendors (the parsers leave the fields the
    // dialect does not have clear).
    if (e.cmask) out.printf(".CMSK=%u", unsigned(e.cmask));
    if (e.intel.any) out.put(".AnyT");
    if (e.edge) out.put(".EDG");
    if (e.inv) out.put(".INV");
    if (e.intel.eq) out.put(".EQ");
    if (e.intel.umask2) out.printf(".UMASK2=0x%02X", unsigned(e.intel.umask2));
    if (e.amd.host_only) out.put(".HostOnly");
    if (e.amd.guest_only) out.put(".GuestOnly");
    if (e.pinned_counter >= 0) out.printf(".CTR=%d", e.pinned_counter);
    if (e.usr != e.os) out.put(e.usr ? ".USR" : ".OS");
    for (unsigned i = 0; i < e.intel.aux_count; ++i) {
        const char* k = "MSR_PF";
        for (usize t = 0; t < spec::kTermCount; ++t)
            if (spec::kTerms[t].field == spec::EventField::aux_msr && spec::kTerms[t].msr == e.intel.aux[i].msr)
                k = spec::kTerms[t].nb;
        out.printf(".%s=0x%llX", k, (unsigned long long)e.intel.aux[i].value);
    }
    if (e.taken_alone) out.put(".TakenAlone");
}

}  // namespace pmulab
