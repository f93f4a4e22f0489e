#include "app/records.h"
#include "measure/memory.h"
#include "x86/cache_geometry.h"

#include "app/out.h"
#include "app/provenance.h"
#include "pmu/pmu.h"
#include "base/json.h"
#include "x86/msr_addr.h"
#include "base/version.h"

namespace pmulab {

namespace {

// The fields of `v` under `prefix` ("pmu" + "gp" -> "pmu.gp"); arrays of scalars are
// joined with ';' into one field.
Status flatten(const Value& v, const StrBuf& prefix, Vec<FlatField>* out) {
    if (v.is_object()) {
        for (usize k = 0; k < v.size(); ++k) {
            StrBuf path;
            if (prefix.size()) path.put(prefix.view()).put('.');
            path.put(v.key(k));
            PMULAB_TRY(flatten(v[k], path, out));
        }
        return ok_status();
    }
    FlatField& f = out->emplace();
    f.key.put(prefix.view());
    if (!v.is_array()) {
        f.value.put(v.text());
        return ok_status();
    }
    for (usize k = 0; k < v.size(); ++k) {
        if (v[k].is_object() || v[k].is_array())
            return Error::make(Errc::invalid_argument, "record field \"%s\": arrays of objects are not flattened",
                               f.key.c_str());
        if (k) f.value.put(';');
        f.value.put(v[k].text());
    }
    return ok_status();
}

void csv_cell(StrBuf& out, StrView v) {
    bool quote = false;
    for (usize i = 0; i < v.len; ++i) quote |= v[i] == ',' || v[i] == '"' || v[i] == '\n' || v[i] == '\r';
    if (!quote) {
        out.put(v);
        return;
    }
    out.put('"');
    for (usize i = 0; i < v.len; ++i) {
        if (v[i] == '"') out.put('"');
        out.put(v[i]);
    }
    out.put('"');
}

StrView field_value(const Vec<FlatField>& f, StrView key) {
    for (const FlatField& x : f)
        if (x.key.view().eq(key)) return x.value.view();
    return StrView();
}

}  // namespace

Status record_flatten(const Value& rec, Vec<FlatField>* out) {
    out->clear();
    if (!rec.is_object()) return Error::make(Errc::invalid_argument, "record: not an object");
    return flatten(rec, StrBuf(), out);
}

void CsvSummary::clear() {
    rows_.clear();
    type_.clear();
    failed_ = false;
}

namespace {

// The field of a record that is an array of objects (the one such field: "cycles" of a
// cycle_by_cycle record), or null.
const Value* rows_field(const Value& rec, usize* at) {
    if (!rec.is_object()) return nullptr;
    for (usize k = 0; k < rec.size(); ++k) {
        const Value& v = rec[k];
        if (v.is_array() && v.size() && v[0].is_object()) {
            *at = k;
            return &v;
        }
    }
    return nullptr;
}

}  // namespace

void CsvSummary::add(const Value& rec) {
    if (failed_) return;
    usize at = 0;
    if (const Value* rows = rows_field(rec, &at)) {
        // One row per element: the record's other fields, then the element's, under the
        // array's name ("cycles.cycle", "cycles.values.instructions").
        for (const Value& el : *rows) {
            Value row = Value::object();
            for (usize k = 0; k < rec.size(); ++k) row.set(rec.key(k), k == at ? el.clone() : rec[k].clone());
            add(row);
        }
        return;
    }
    Vec<FlatField> f;
    Status s = record_flatten(rec, &f);
    if (!s.ok()) {
        failed_ = true;
        error_ = s.error();
        return;
    }
    StrView t = field_value(f, "type");
    if (t.eq("meta") || t.eq("error") || t.eq("warning") || t.eq("progress")) return;
    if (type_.size() == 0) type_.put(t);
    if (t.eq(type_.view())) rows_.push(move(f));
}

Status CsvSummary::write(StrBuf* csv) const {
    csv->clear();
    if (failed_) return error_;
    Vec<StrBuf> header;
    for (const Vec<FlatField>& r : rows_)
        for (const FlatField& f : r) {
            bool seen = false;
            for (const StrBuf& h : header) seen |= h.view().eq(f.key.view());
            if (!seen) header.emplace().put(f.key.view());
        }
    for (usize k = 0; k < header.size(); ++k) {
        if (k) csv->put(',');
        csv_cell(*csv, header[k].view());
    }
    if (header.size()) csv->put("\r\n");
    for (const Vec<FlatField>& r : rows_) {
        for (usize k = 0; k < header.size(); ++k) {
            if (k) csv->put(',');
            csv_cell(*csv, field_value(r, header[k].view()));
        }
        csv->put("\r\n");
    }
    return ok_status();
}

namespace {
// The microcode revision of the calling CPU.
Result<u64> microcode_revision(Hw& hw, Vendor v) {
    if (v == Vendor::intel) {
        // SDM Vol. 3A §10.11.7.1: write 0 to IA32_BIOS_SIGN_ID, execute CPUID(1),
        // read the revision from bits 63:32.
        Status w = hw.wrmsr(msr::IA32_BIOS_SIGN_ID, 0);
        hw.cpuid(1, 0);
        Result<u64> r = hw.rdmsr(msr::IA32_BIOS_SIGN_ID);
        if (!w.ok()) return w.error();
        if (!r.ok()) return r.error();
        return r.value() >> 32;
    }
    if (is_amd_family(v)) {
        // AMD: MSR 8BH is PATCH_LEVEL, the revision in bits 31:0 (read-only).
        Result<u64> r = hw.rdmsr(msr::IA32_BIOS_SIGN_ID);
        return r.ok() ? Result<u64>(r.value() & 0xffffffffu) : r;
    }
    return Error::make(Errc::unsupported, "no known microcode revision MSR");
}
}  // namespace

Value build_meta_record(Platform& p, const char* command_line) {
    Hw& hw = p.hw();
    // The calling CPU (the BSP): its probe gives the identity and the counter read method
    // the PMU detection picks (pmu_decode), the same as every other report.
    CpuProbe probe;
    pmu_probe(hw, &probe);
    CpuDecoded d = decode_cpuid(probe.cpuid);
    PmuInfo pmu;
    pmu_decode(probe, &pmu);
    Result<u64> microcode = microcode_revision(hw, d.id.vendor);
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "meta").field("pmulab_version", PMULAB_VERSION);
    w.field("cpu_vendor", d.id.vendor_string).field_hex("cpu_signature", d.id.signature);
    w.field_u("family", d.id.family).field_u("model", d.id.model).field_u("stepping", d.id.stepping);
    w.field("brand", d.id.brand);
    if (microcode.ok()) w.field_hex("microcode", microcode.value());
    else w.key("microcode").null();
    w.field("firmware_vendor", p.firmware_vendor()).field_hex("firmware_revision", p.firmware_revision());
    char when[40] = {};
    p.now(when, sizeof when);
    w.field("time", when);
    w.field("command_line", command_line);
    w.field("counter_method", counter_method_name(pmu.method));
    tsc_freq_fields(w, p.tsc_frequency());  // ticks to nanoseconds
    w.field_b("hypervisor", d.id.hypervisor);
    if (d.id.hypervisor) {  // CPUID 4000_0000H: the hypervisor's vendor ("TCGTCGTCGTCG", "KVMKVMKVM")
        char sig[13];
        hypervisor_signature(hw.cpuid(0x40000000u, 0), sig);
        w.field("hypervisor_vendor", sig);
    }
    // Where the numbers come from: hardware, a virtual machine (TCG, -icount), simulated.
    provenance_json(w, provenance(p));
    w.field_u("cpus", hw.cpu_count());
    cache_geometry_json(w, decode_cache_geometry(probe.cpuid));  // the calling CPU's (docs/cache.md)
    memory_map_json(w, p.measure());                             // the firmware's free memory now
    // pmulab-sim: a simulated machine, so that nobody mistakes its records for a measurement.
    w.field_b("simulated", p.simulated() != nullptr);
    if (p.simulated()) w.field("simulated_machine", p.simulated());
    w.end_object();
    return rec;
}

}  // namespace pmulab
