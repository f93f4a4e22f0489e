// Event lists: the --events splitter (split_event_list, shared with the event-file
// resolver), parse_event_list and nanoBench-style list files (parse_event_file).
#include "events/event_terms.h"

namespace pmulab {

namespace {

// Whether a piece of a list is a perf term (KEY=VALUE with a perf key, or a bare perf
// flag), and whether that term is event= (which starts a new item).
bool is_perf_key(StrView piece, bool* is_event) {
    StrView t = piece.trim();
    usize eq = t.find('=');
    const spec::TermDef* d = spec::find_term(spec::TermSyntax::perf, t.sub(0, eq));
    if (!d) return false;
    if (eq >= t.len && d->value) return false;  // "umask" alone is not a term
    *is_event = d->field == spec::EventField::event;
    return true;
}

}  // namespace

Status split_event_list(StrView text, Vec<EventListItem>* items) {
    items->clear();
    Vec<bool> perf;  // per item: a perf term list that later pieces may continue
    usize start = 0;
    bool in_slash = false;
    char sep_before = 0;
    for (usize i = 0; i <= text.len; ++i) {
        char c = i < text.len ? text[i] : 0;
        if (c == '/') in_slash = !in_slash;
        bool sep = i == text.len || c == ';' || (c == ',' && !in_slash);
        if (!sep) continue;
        StrView piece = text.sub(start, i - start);
        usize lead = 0;
        while (lead < piece.len && spec::is_ws(piece[lead])) ++lead;
        usize off = start + lead;
        if (piece.trim().empty()) {
            if (text.trim().empty()) return Error::make(Errc::invalid_argument, "empty event list");
            return Error::make(Errc::invalid_argument,
                               "event list item %zu is empty (at offset %zu): two separators in a row, or one at "
                               "the start or end",
                               items->size() + 1, off);
        }
        bool is_event = false;
        bool perf_term = is_perf_key(piece, &is_event);
        if (sep_before == ',' && !items->empty() && perf.back() && perf_term && !is_event) {
            items->back().end = i;  // a continuation term of the previous perf list
        } else {
            if (items->size() >= kMaxEventsPerList)
                return Error::make(Errc::invalid_argument, "too many events in the list (at most %zu)",
                                   kMaxEventsPerList);
            items->push(EventListItem{off, i});
            perf.push(perf_term);
        }
        sep_before = c;
        if (c == ';') in_slash = false;
        start = i + 1;
    }
    return ok_status();
}

Status parse_event_list(StrView text, Vec<Event>* out, EventDialect dialect) {
    Vec<EventListItem> items;
    PMULAB_TRY(split_event_list(text, &items));
    for (usize k = 0; k < items.size(); ++k) {
        Result<Event> r = parse_event_spec(text.sub(items[k].begin, items[k].end - items[k].begin), dialect);
        if (!r.ok()) return Error::make(Errc::invalid_argument, "event list item %zu: %s", k + 1, r.error().msg);
        out->push(r.value());
    }
    return ok_status();
}

Status parse_event_file(StrView text, const char* file_name, Vec<Event>* out, EventDialect dialect) {
    constexpr usize kMaxEventsPerFile = 4096;
    usize count = 0;
    u32 line_no = 0;
    usize pos = 0;
    while (pos <= text.len) {
        usize nl = text.find('\n', pos);
        StrView line = text.sub(pos, nl - pos);
        ++line_no;
        pos = nl + 1;
        line = line.sub(0, line.find('#')).trim();
        if (line.empty()) {
            if (nl >= text.len) break;
            continue;
        }
        Result<Event> r = parse_event_spec(line, dialect);
        if (!r.ok()) return Error::make(Errc::invalid_argument, "%s:%u: %s", file_name, line_no, r.error().msg);
        if (++count > kMaxEventsPerFile)
            return Error::make(Errc::invalid_argument, "%s:%u: too many events (at most %zu per file)", file_name,
                               line_no, kMaxEventsPerFile);
        out->push(r.value());
        if (nl >= text.len) break;
    }
    if (count == 0)
        return Error::make(Errc::invalid_argument, "%s: no events (only comments and blank lines)", file_name);
    return ok_status();
}

}  // namespace pmulab
