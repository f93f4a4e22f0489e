// Event files (\pmulab\events\*.evt): the choice of file per CPU and the resolution of
// event names through it (EventTables); the files themselves are parsed in
// event_table.cpp. See event_files.h and docs/events.md.
#include "events/event_files.h"
#include "events/spec_lexer.h"

namespace pmulab {

namespace {

using namespace spec;

constexpr usize kHeaderProbe = 4096;  // bytes read to see a file's header

}  // namespace

// ---- EventTables ----

Status EventTables::scan() {
    if (scanned_) return ok_status();
    scanned_ = true;
    files_found_.clear();
    if (!files_) return ok_status();
    Vec<FileName> names;
    Status ls = files_->list(dir_, kEventFileSuffix, &names);
    if (!ls.ok()) {
        if (ls.error().code == Errc::not_found) return ok_status();
        return ls.error().with_context("cannot list the event files in %s", dir_);
    }
    // Deterministic order: by name, case-insensitively (FAT order is creation order).
    sort_small(names.data(), names.size(), [](const FileName& a, const FileName& b) {
        for (usize i = 0;; ++i) {
            char x = ascii_lower(a.name[i]), y = ascii_lower(b.name[i]);
            if (x != y) return x < y;
            if (!x) return false;
        }
    });
    for (const FileName& fn : names) {
        Found& f = files_found_.emplace();
        format_to(f.path, sizeof f.path, "%s\\%s", dir_, fn.name);
        Result<Vec<char>> head = files_->read(f.path, kHeaderProbe);
        if (!head.ok()) return head.error().with_context("cannot read %s", f.path);
        StrView text(head.value().data(), head.value().size());
        bool cut = text.len >= kHeaderProbe;
        if (cut) {  // drop a partial last line
            usize last = text.len;
            while (last > 0 && text[last - 1] != '\n') --last;
            text = text.sub(0, last);
        }
        PMULAB_TRY(parse_event_table(text, f.path, &f.header, true));
        if (cut && f.header.first_event_line == 0) {  // the header goes on past the probe
            Result<Vec<char>> all = files_->read(f.path);
            if (!all.ok()) return all.error().with_context("cannot read %s", f.path);
            PMULAB_TRY(parse_event_table(StrView(all.value().data(), all.value().size()), f.path, &f.header, true));
        }
    }
    return ok_status();
}

Result<const EventTable*> EventTables::for_cpu(const CpuIdentity& id) {
    PMULAB_TRY(scan());
    int best = -1;
    usize best_i = 0;
    bool tie = false;
    usize tie_i = 0;
    for (usize i = 0; i < files_found_.size(); ++i) {
        int s = files_found_[i].header.match_score(id);
        if (s < 0) continue;
        if (s > best) {
            best = s;
            best_i = i;
            tie = false;
        } else if (s == best && !tie) {
            tie = true;
            tie_i = i;
        }
    }
    if (best < 0) return static_cast<const EventTable*>(nullptr);
    if (tie) {
        StrBuf cpu;
        put_table_cpu(cpu, id);
        return Error::make(Errc::invalid_argument, "event files %s and %s are both for %s; keep one of them",
                           files_found_[best_i].path, files_found_[tie_i].path, cpu.c_str());
    }
    Found& f = files_found_[best_i];
    if (!f.parsed) {
        Result<Vec<char>> all = files_->read(f.path);
        if (!all.ok()) return all.error().with_context("cannot read %s", f.path);
        PMULAB_TRY(parse_event_table(StrView(all.value().data(), all.value().size()), f.path, &f.table));
        f.parsed = true;
    }
    return static_cast<const EventTable*>(&f.table);
}

namespace {

// "FE.DSB_MISS": hex before the first dot (nanoBench's event select), then a part
// longer than a UMASK, and nothing a name cannot hold.
bool could_be_hex_name(StrView tok) {
    usize dot = tok.find('.');
    if (dot == 0 || dot >= tok.len || !all_hex(tok.sub(0, dot))) return false;
    usize dot2 = tok.find('.', dot + 1);
    if (dot2 - dot - 1 <= 2) return false;
    StrView name = tok.sub(0, tok.find(':'));
    for (usize i = 0; i < name.len; ++i)
        if (!name_char(name[i])) return false;
    return true;
}

}  // namespace

Error EventTables::unknown_name(StrView name, const CpuIdentity& id, const EventTable* t) const {
    char q[64];
    clip(name, q, sizeof q, 63);
    StrBuf cpu;
    put_table_cpu(cpu, id);
    if (t)
        return Error::make(Errc::invalid_argument,
                           "event '%s' is not in the event file for %s (%s) nor an "
                           "architectural event",
                           q, cpu.c_str(), t->path);
    if (!files_)
        return Error::make(Errc::invalid_argument, "event '%s' is not an architectural event (no event files here)", q);
    if (files_found_.empty())
        return Error::make(Errc::invalid_argument,
                           "event '%s' is not an architectural event, and %s has no event files (for model-specific "
                           "names put the file for %s there; see docs/events.md)",
                           q, dir_, cpu.c_str());
    return Error::make(Errc::invalid_argument,
                       "event '%s' is not an architectural event, and none of the %zu event files in %s is for %s "
                       "(%s)",
                       q, files_found_.size(), dir_, cpu.c_str(), id.vendor_string);
}

Result<Event> EventTables::resolve(StrView spec, const CpuIdentity& id, EventDialect dialect) {
    bool table_error = false;
    return resolve_item(spec, id, dialect, &table_error);
}

Result<Event> EventTables::resolve_item(StrView spec, const CpuIdentity& id, EventDialect dialect, bool* table_error) {
    *table_error = false;
    StrView s = spec.trim();
    SpecSite site = SpecSite::of_spec(s, dialect);
    usize t = 0;
    while (t < s.len && !is_ws(s[t])) ++t;
    StrView tok = s.sub(0, t);
    if (dialect != EventDialect::intel || s.empty()) return parse_event_spec(s, dialect);
    // A name whose first part is hex ("FE.DSB_MISS") looks like nanoBench's EE.UU: it is
    // looked up only when it does not parse as one.
    bool is_name = classify_token(tok) == TokenForm::name;
    bool hex_name = !is_name && could_be_hex_name(tok);
    if (!is_name && !hex_name) return parse_event_spec(s, dialect);
    for (usize i = 0; i < s.len; ++i)  // the same check parse_event_spec makes first
        if (!printable(s[i]) && !is_ws(s[i])) return parse_event_spec(s, dialect);
    Result<Event> raw = hex_name ? parse_event_spec(s, dialect) : Result<Event>(Error{});
    if (hex_name && raw.ok()) return raw;
    // The display name first, as parse_event_spec checks it (same messages).
    SpecWords words;
    PMULAB_TRY(split_spec_words(site, s, &words));
    StrView display = words.name;
    usize colon = tok.find(':');
    StrView name = tok.sub(0, colon);
    if (syntax_only_) {
        if (hex_name) return Event{};  // perhaps a name in a file: resolved per CPU later
        if (parse_event_spec(name, dialect).ok() || (all_hex(name) && name.len <= 4))
            return parse_event_spec(s, dialect);
        return Event{};
    }
    Result<const EventTable*> table = for_cpu(id);
    if (!table.ok()) {
        *table_error = true;
        return table.error();
    }
    const Event* te = table.value() ? table.value()->find(name) : nullptr;
    if (!te && hex_name) return raw;  // not a name after all: the parser's message
    if (!te) {
        Result<Event> arch = parse_event_spec(s, dialect);
        if (arch.ok()) return arch;
        // A known architectural name with a bad modifier keeps the parser's message; an
        // unknown name gets ours (a short hex word keeps the parser's EE.UU hint).
        if (parse_event_spec(name, dialect).ok() || (all_hex(name) && name.len <= 4)) return arch;
        return unknown_name(name, id, table.value());
    }
    Event e = *te;
    if (colon < tok.len)  // perf privilege modifiers, as on the architectural names
        PMULAB_TRY(parse_priv_mods(site, tok.sub(colon + 1), colon + 1, true, &e));
    if (!display.empty()) clip(display, e.name, sizeof e.name, Event::kNameMax - 1);
    return e;
}

Status EventTables::resolve_list(StrView text, const CpuIdentity& id, Vec<Event>* out, EventDialect dialect) {
    // Items exactly as parse_event_list splits them (event_list.cpp).
    Vec<EventListItem> items;
    PMULAB_TRY(split_event_list(text, &items));
    for (usize k = 0; k < items.size(); ++k) {
        bool table_error = false;
        Result<Event> r = resolve_item(text.sub(items[k].begin, items[k].end - items[k].begin), id, dialect,
                                       &table_error);
        if (!r.ok()) {
            if (table_error) return r.error();  // about the event files, not the item
            return Error::make(r.error().code, "event list item %zu: %s", k + 1, r.error().msg);
        }
        out->push(r.value());
    }
    return ok_status();
}

Status EventTables::resolve_file_text(StrView text, const char* path, const CpuIdentity& id, Vec<Event>* out,
                                      EventDialect dialect) {
    constexpr usize kMaxEventsPerFile = 4096;
    usize count = 0;
    u32 line_no = 0;
    usize pos = 0;
    while (pos < text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        ++line_no;
        pos = nl + 1;
        line = line.sub(0, line.find('#')).trim();
        if (line.empty()) continue;
        bool table_error = false;
        Result<Event> r = resolve_item(line, id, dialect, &table_error);
        if (!r.ok()) {
            if (table_error) return r.error();
            return r.error().with_context("%s:%u", path, line_no);
        }
        if (++count > kMaxEventsPerFile)
            return Error::make(Errc::invalid_argument, "%s:%u: too many events (at most %zu per file)", path, line_no,
                               kMaxEventsPerFile);
        out->push(r.value());
    }
    if (count == 0) return Error::make(Errc::invalid_argument, "%s: no events (only comments and blank lines)", path);
    return ok_status();
}

Status EventTables::resolve_file(const char* path, const CpuIdentity& id, Vec<Event>* out, EventDialect dialect) {
    if (!files_) return Error::make(Errc::unsupported, "%s: there are no files here to read event lists from", path);
    Result<Vec<char>> data = files_->read(path);
    if (!data.ok()) {
        if (data.error().code == Errc::not_found)
            return Error::make(Errc::invalid_argument, "event list file %s: no such file on the boot volume", path);
        return data.error();
    }
    return resolve_file_text(StrView(data.value().data(), data.value().size()), path, id, out, dialect);
}

Status check_event_list_syntax(StrView text, EventDialect dialect) {
    EventTables t(nullptr);
    t.syntax_only_ = true;
    Vec<Event> ignored;
    return t.resolve_list(text, CpuIdentity{}, &ignored, dialect);
}

}  // namespace pmulab

namespace pmulab {

Status check_event_list_syntax_any(StrView text) {
    Status intel = check_event_list_syntax(text, EventDialect::intel);
    if (intel.ok()) return intel;
    const EventDialect others[] = {EventDialect::amd_zen, EventDialect::amd, EventDialect::netburst};
    for (EventDialect d : others)
        if (check_event_list_syntax(text, d).ok()) return ok_status();
    return intel;
}

}  // namespace pmulab
