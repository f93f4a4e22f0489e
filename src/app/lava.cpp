#include "app/lava.h"

namespace pmulab {

namespace {

// A value LAVA takes whole: printable ASCII except space, '=', '<', '>' (others, and
// runs of them, become one '_').
void put_token(StrBuf& b, StrView s) {
    bool last_sub = false;
    for (usize i = 0; i < s.len; ++i) {
        char c = s[i];
        bool ok = c > ' ' && c < 127 && c != '=' && c != '<' && c != '>';
        if (ok) {
            b.put(c);
            last_sub = false;
        } else if (!last_sub) {
            b.put('_');
            last_sub = true;
        }
    }
}

// A top-level field as text ("" when missing, null, or not a scalar).
StrView find(const Value& rec, const char* key) {
    const Value* v = rec.get(StrView(key));
    return v && !v->is_object() && !v->is_array() ? v->text() : StrView();
}

}  // namespace

bool lava_line_for_record(const Value& f, StrBuf* out) {
    if (!f.is_object()) return false;
    StrView type = find(f, "type");
    StrBuf line;
    line.put("<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=");
    if (type.eq(StrView("result"))) {
        StrView bench = find(f, "bench"), event = find(f, "event"), cpu = find(f, "cpu");
        StrView size = find(f, "size"), value = find(f, "per_iteration");
        if (!bench.len || !event.len || !cpu.len || !value.len) return false;
        line.put("run/");
        put_token(line, bench);
        line.put('/');
        if (size.len) put_token(line, size);
        else line.put('-');
        line.put('/');
        put_token(line, event);
        line.put("/cpu");
        put_token(line, cpu);
        line.put(" RESULT=pass MEASUREMENT=");
        put_token(line, value);
        StrView unit = find(f, "unit");
        line.put(" UNITS=");
        line.put(unit.eq(StrView("counts / iteration")) ? "counts/iteration" : "ticks/iteration");
    } else if (type.eq(StrView("check"))) {
        StrView name = find(f, "name"), status = find(f, "status"), cpu = find(f, "cpu");
        if (!name.len || !status.len) return false;
        line.put("selftest/");
        put_token(line, name);
        if (cpu.len) {
            line.put("/cpu");
            put_token(line, cpu);
        }
        const char* result = status.eq(StrView("PASS"))   ? "pass"
                             : status.eq(StrView("FAIL")) ? "fail"
                             : status.eq(StrView("SKIP")) ? "skip"
                                                          : "unknown";  // NOT VERIFIED
        line.printf(" RESULT=%s", result);
    } else {
        return false;
    }
    line.put(">\n");
    out->put(line.view());
    return true;
}

void lava_begin_line(const char* command, StrBuf* out) {
    out->put("pmulab-lava: begin ");
    put_token(*out, StrView(command));
    out->put('\n');
}

void lava_end_lines(const char* command, int status, StrBuf* out) {
    out->put("<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=");
    put_token(*out, StrView(command));
    out->printf("/exit-status RESULT=%s MEASUREMENT=%d UNITS=status>\n", status == 0 ? "pass" : "fail", status);
    out->put("pmulab-lava: end ");
    put_token(*out, StrView(command));
    out->printf(" status %d\n", status);
}

}  // namespace pmulab
