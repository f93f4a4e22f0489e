#include "app/records.h"

#include "app/out.h"
#include "pmu/pmu.h"
#include "base/json.h"
#include "x86/msr_addr.h"
#include "base/version.h"

namespace pmulab {

namespace {

struct JsonFlattener {
    StrView s;
    usize i = 0;
    Vec<FlatField>* out;

    void ws() {
        while (i < s.len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }
    Error err(const char* what) {
        return Error::make(Errc::invalid_argument, "JSON record: %s at offset %u", what, unsigned(i));
    }
    Status string(StrBuf* v) {
        if (i >= s.len || s[i] != '"') return err("expected a string");
        ++i;
        while (i < s.len && s[i] != '"') {
            char c = s[i++];
            if (c != '\\') {
                if (v) v->put(c);
                continue;
            }
            if (i >= s.len) return err("unterminated escape");
            char e = s[i++];
            char r = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            if (e == 'u') {
                u64 cp;
                if (i + 4 > s.len || !parse_hex_u64(s.sub(i, 4), &cp)) return err("bad \\u escape");
                i += 4;
                r = cp < 0x80 ? char(cp) : '?';
            }
            if (v) v->put(r);
        }
        if (i >= s.len) return err("unterminated string");
        ++i;
        return ok_status();
    }
    Status scalar(StrBuf* v) {
        usize b = i;
        while (i < s.len && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ') ++i;
        StrView t = s.sub(b, i - b);
        if (t.empty()) return err("expected a value");
        bool ok = t.eq("true") || t.eq("false") || t.eq("null");
        if (!ok) {
            ok = true;
            for (usize k = 0; k < t.len; ++k) {
                char c = t[k];
                ok &= (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
            }
        }
        if (!ok) return err("bad literal");
        if (v) v->put(t.eq("null") ? StrView("") : t);
        return ok_status();
    }
    // Value at `prefix`; arrays of scalars are joined into one field.
    Status value(const StrBuf& prefix, int depth) {
        if (depth > 32) return err("nesting too deep");
        ws();
        if (i >= s.len) return err("unexpected end");
        if (s[i] == '{') return object(prefix, depth + 1);
        if (s[i] == '[') {
            ++i;
            FlatField& f = out->emplace();
            f.key.put(prefix.view());
            bool first = true;
            ws();
            if (i < s.len && s[i] == ']') {
                ++i;
                return ok_status();
            }
            for (;;) {
                ws();
                if (i < s.len && (s[i] == '{' || s[i] == '[')) {
                    // Nested structures inside arrays are summarised by their count.
                    return err("arrays of objects are not flattened");
                }
                if (!first) f.value.put(';');
                first = false;
                StrBuf v;
                Status st = (i < s.len && s[i] == '"') ? string(&v) : scalar(&v);
                if (!st.ok()) return st;
                f.value.put(v.view());
                ws();
                if (i < s.len && s[i] == ',') {
                    ++i;
                    continue;
                }
                if (i < s.len && s[i] == ']') {
                    ++i;
                    return ok_status();
                }
                return err("expected ',' or ']'");
            }
        }
        FlatField& f = out->emplace();
        f.key.put(prefix.view());
        return s[i] == '"' ? string(&f.value) : scalar(&f.value);
    }
    Status object(const StrBuf& prefix, int depth) {
        ++i;  // '{'
        ws();
        if (i < s.len && s[i] == '}') {
            ++i;
            return ok_status();
        }
        for (;;) {
            ws();
            StrBuf key;
            Status st = string(&key);
            if (!st.ok()) return st;
            ws();
            if (i >= s.len || s[i] != ':') return err("expected ':'");
            ++i;
            StrBuf path;
            if (prefix.size()) {
                path.put(prefix.view());
                path.put('.');
            }
            path.put(key.view());
            st = value(path, depth);
            if (!st.ok()) return st;
            ws();
            if (i < s.len && s[i] == ',') {
                ++i;
                continue;
            }
            if (i < s.len && s[i] == '}') {
                ++i;
                return ok_status();
            }
            return err("expected ',' or '}'");
        }
    }
};

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

Status json_flatten(StrView json, Vec<FlatField>* out) {
    out->clear();
    JsonFlattener p{json.trim(), 0, out};
    p.ws();
    if (p.i >= p.s.len || p.s[p.i] != '{') return p.err("expected an object");
    StrBuf root;
    PMULAB_TRY(p.object(root, 1));
    p.ws();
    if (p.i != p.s.len) return p.err("trailing characters");
    return ok_status();
}

Status records_to_csv(const Vec<StrBuf>& lines, StrBuf* csv) {
    csv->clear();
    Vec<Vec<FlatField>> rows;
    StrBuf type;
    for (const StrBuf& l : lines) {
        Vec<FlatField> f;
        PMULAB_TRY(json_flatten(l.view(), &f));
        StrView t = field_value(f, "type");
        if (t.eq("meta") || t.eq("error") || t.eq("warning") || t.eq("progress")) continue;
        if (type.size() == 0) type.put(t);
        if (!t.eq(type.view())) continue;
        rows.push(move(f));
    }
    Vec<StrBuf> header;
    for (const Vec<FlatField>& r : rows)
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
    for (const Vec<FlatField>& r : rows) {
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

void build_meta_record(Platform& p, const char* command_line, StrBuf* line) {
    Hw& hw = p.hw();
    // The calling CPU (the BSP): its probe gives the identity and the counter read method
    // the PMU detection picks (pmu_decode), the same as every other report.
    CpuProbe probe;
    pmu_probe(hw, &probe);
    CpuDecoded d = decode_cpuid(probe.cpuid);
    PmuInfo pmu;
    pmu_decode(probe, &pmu);
    Result<u64> microcode = microcode_revision(hw, d.id.vendor);
    JsonWriter w(*line);
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
    w.field_u("cpus", hw.cpu_count());
    // pmulab-sim: a simulated machine, so that nobody mistakes its records for a measurement.
    w.field_b("simulated", p.simulated() != nullptr);
    if (p.simulated()) w.field("simulated_machine", p.simulated());
    w.end_object();
    line->put('\n');
}

}  // namespace pmulab
