#include "app/trace_platform.h"

#include "base/json.h"

namespace pmulab {

// The measurement services of the inner platform; run_on_cpu prints what the AP
// recorded once the BSP has it back (EfiMeasure starts APs without Hw::run_on_cpu).
class TracePlatform::Measure final : public ForwardingMeasure {
public:
    Measure(MeasurePlatform& inner, MsrTrace& trace) : ForwardingMeasure(&inner), trace_(trace) {}
    Status run_on_cpu(Hw& hw, u32 cpu, CpuFn fn, void* ctx) override {
        Status s = inner().run_on_cpu(hw, cpu, fn, ctx);
        trace_.flush();
        return s;
    }
    // The handler's NMI records its accesses; nothing is printed from it (MsrTrace::hold).
    Status pmi_attach(PmiHandler* h) override {
        trace_.hold(true);
        Status s = inner().pmi_attach(h);
        if (!s.ok()) trace_.hold(false);
        return s;
    }
    void pmi_detach() override {
        inner().pmi_detach();
        trace_.hold(false);
    }
    Result<u32> run_with_nmis(Hw& hw, u32 cpu, NmiProbe& probe, CpuFn fn, void* ctx) override {
        Result<u32> r = inner().run_with_nmis(hw, cpu, probe, fn, ctx);
        trace_.flush();
        return r;
    }

private:
    MsrTrace& trace_;
};

namespace {
TraceNames names_of(Hw& hw) {
    CpuidSnapshot snap;
    capture_cpuid(hw, &snap);
    return trace_names(decode_cpuid(snap));
}
}  // namespace

TracePlatform::TracePlatform(Platform& inner)
    : ForwardingPlatform(inner), trace_(inner.hw(), *this), names_(names_of(inner.hw())) {}

TracePlatform::~TracePlatform() { delete measure_; }

MeasurePlatform* TracePlatform::measure() {
    MeasurePlatform* m = inner().measure();
    if (!m) return nullptr;
    if (!measure_) measure_ = new Measure(*m, trace_);
    return measure_;
}

void TracePlatform::trace(const TraceEntry& e) {
    if (!out_) return;
    StrBuf name, fields;
    trace_reg_name(names_, e.op, e.addr, name);
    bool have_value = !e.code || e.op == TraceOp::wrmsr;
    if (e.op != TraceOp::rdpmc && have_value && !e.vector) trace_fields(names_, e.addr, e.value, fields);
    const char* result = e.vector == kVectorGP ? "#GP" : e.vector == kVectorUD ? "#UD" : e.vector ? "fault" : "ok";
    StrBuf line;
    if (out_->json()) {
        Value rec;
        JsonWriter w(rec);
        w.begin_object().field("type", "msr_trace").field_u("cpu", e.cpu);
        w.field("op", e.op == TraceOp::rdmsr ? "rdmsr" : e.op == TraceOp::wrmsr ? "wrmsr" : "rdpmc");
        w.field_hex(e.op == TraceOp::rdpmc ? "ecx" : "msr", e.addr).field("register", name.view());
        if (have_value && !(e.vector && e.op != TraceOp::wrmsr)) w.field_hex("value", e.value);
        else w.key("value").null();
        w.field("fields", fields.view()).field("result", result);
        w.field_b("generated_code", e.code).field_u("runs", e.runs);
        w.end_object();
        out_->record(rec);
        return;
    }
    if (e.runs && e.block_first)
        line.printf("msr: CPU %u: each of %u run%s of the region (interrupts masked):\n", e.cpu, e.runs,
                    e.runs == 1 ? "" : "s");
    line.printf("msr: CPU %u %s%s %s (0x%x)", e.cpu, e.runs ? "  " : "", trace_op_name(e.op), name.c_str(), e.addr);
    if (e.op == TraceOp::wrmsr) line.printf(" <- 0x%llx", (unsigned long long)e.value);
    else if (!e.code && !e.vector) line.printf(" -> 0x%llx", (unsigned long long)e.value);
    if (e.code) line.put(" [generated code]");
    if (e.vector) line.printf(": %s", vector_name(e.vector));
    else if (fields.size()) line.printf(": %s", fields.c_str());
    line.put('\n');
    out_->text_buf(line);
}

void TracePlatform::trace_dropped(u64 n) {
    if (out_)
        out_->warn("--trace-msr: %llu accesses not shown: more than %u in one call on one CPU", (unsigned long long)n,
                   MsrTrace::kDefaultCapacity);
}

}  // namespace pmulab
