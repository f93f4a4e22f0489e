// The checks of the event-parser fuzz target (tests/fuzz/fuzz_events.cpp), shared with
// the unit test that replays the seed corpus and every crasher
// (tests/unit/events/test_fuzz_replay.cpp). Host code: the standard library is fine here.
//
// One input is parsed both as a --events list and as an event file. Whatever parses
// must satisfy the parsers' contracts; whatever fails must fail with a non-empty,
// terminated invalid_argument message. Parsed events are then checked against several
// PMUs and allocated; allocations must place every event exactly once and never use a
// counter twice in a group.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstring>
#include <string>

#include "pmu/alloc.h"

namespace fuzz_events {

using namespace pmulab;

inline std::string err_ok(const Error& e, const char* what) {
    size_t n = strnlen(e.msg, sizeof e.msg);
    if (n == sizeof e.msg) return std::string(what) + ": error message not terminated";
    if (n == sizeof e.msg - 1) return std::string(what) + ": error message fills the buffer (cut short)";
    if (n == 0) return std::string(what) + ": empty error message";
    if (e.code != Errc::invalid_argument) return std::string(what) + ": error code is not invalid_argument";
    return "";
}

inline PmuCaps make_caps(int which) {
    PmuCaps c;
    c.leaf_0a = true;
    c.gp_width = 48;
    c.ebx_length = 7;
    switch (which) {
        case 0: break;  // no PMU (QEMU TCG)
        case 1:
            c.version = 1;
            c.gp_counters = 2;
            break;
        case 2:
            c.version = 3;
            c.gp_counters = 4;
            c.fixed_counters = 3;
            c.fixed_width = 48;
            c.fixed_effective = 7;
            break;
        case 3:  // v5 sparse fixed counters
            c.version = 5;
            c.gp_counters = 8;
            c.ebx_length = 8;
            c.fixed_mask = 0b1001;
            c.fixed_effective = 0b1001;
            c.fixed_width = 48;
            break;
        default:  // v6 with leaf-23H bitmaps, UMASK2 and EQ
            c.version = 6;
            c.gp_counters = 8;
            c.ebx_length = 13;
            c.fixed_counters = 4;
            c.fixed_effective = 0xF;
            c.fixed_width = 48;
            c.leaf_23 = true;
            c.leaf23_subleaves = 0b10;
            c.gp_bitmap = 0b11110011;
            c.fixed_bitmap = 0b1111;
            c.umask2 = true;
            c.eq_bit = true;
            break;
    }
    return c;
}

inline std::string check_events(const Vec<Event>& ev) {
    for (const Event& e : ev) {
        size_t n = strnlen(e.name, sizeof e.name);
        if (n == sizeof e.name) return "event name not terminated";
        if (n == 0) return "empty event name";
        if (e.kind == EventKind::programmable) {
            // The encoding parses back to the same register value and constraints.
            StrBuf enc;
            put_event_encoding(enc, e);
            Result<Event> back = parse_event_spec(enc.view());
            if (!back.ok()) return std::string("encoding '") + enc.c_str() + "' does not parse: " + back.error().msg;
            const Event& b = back.value();
            if (b.perfevtsel().raw() != e.perfevtsel().raw() || b.pinned_counter != e.pinned_counter ||
                b.taken_alone != e.taken_alone || b.intel.aux_count != e.intel.aux_count)
                return std::string("encoding '") + enc.c_str() + "' does not round-trip";
        }
    }
    for (int which = 0; which < 5; ++which) {
        PmuCaps c = make_caps(which);
        for (const Event& e : ev) {
            Result<EventRoute> r = check_event(e, c);
            if (!r.ok() && r.error().code != Errc::unsupported) return "check_event: error code is not unsupported";
        }
        Allocation a;
        Status st = allocate_counters(ev, c, &a);
        if (!st.ok()) {
            if (!a.groups.empty()) return "failed allocation left groups behind";
            continue;
        }
        if (a.group_of.size() != ev.size()) return "group_of has the wrong size";
        std::string seen(ev.size(), 0);
        for (size_t g = 0; g < a.groups.size(); ++g) {
            u64 used = 0;
            for (const Assignment& as : a.groups[g].events) {
                if (as.event >= ev.size()) return "assignment names a missing event";
                if (seen[as.event]++) return "event placed twice";
                if (a.group_of[as.event] != g) return "group_of disagrees with the groups";
                if (as.kind == CounterKind::none) continue;
                unsigned slot = as.kind == CounterKind::gp ? as.index : 32u + as.index;
                if (used & (u64(1) << slot)) return "counter used twice in a group";
                used |= u64(1) << slot;
            }
        }
        for (char s : seen)
            if (s != 1) return "event not placed";
        StrBuf text;
        render_allocation_text(text, ev.data(), ev.size(), a);
        JsonWriter w(text);
        w.begin_object();
        write_allocation_json(w, ev.data(), ev.size(), a);
        w.end_object();
    }
    return "";
}

// Returns "" when every contract holds, else what broke.
inline std::string check_input(const uint8_t* data, size_t size) {
    StrView text(reinterpret_cast<const char*>(data), size);
    {
        Vec<Event> ev;
        Status st = parse_event_list(text, &ev);
        if (!st.ok()) {
            std::string m = err_ok(st.error(), "parse_event_list");
            if (!m.empty()) return m;
        } else {
            std::string m = check_events(ev);
            if (!m.empty()) return "list: " + m;
        }
    }
    {
        Vec<Event> ev;
        Status st = parse_event_file(text, "fuzz.cfg", &ev);
        if (!st.ok()) {
            std::string m = err_ok(st.error(), "parse_event_file");
            if (!m.empty()) return m;
            if (strncmp(st.error().msg, "fuzz.cfg", 8) != 0) return "parse_event_file: error does not name the file";
        } else {
            if (ev.size() > 64) ev.resize(64);  // keep allocation cheap
            std::string m = check_events(ev);
            if (!m.empty()) return "file: " + m;
        }
    }
    return "";
}

}  // namespace fuzz_events
