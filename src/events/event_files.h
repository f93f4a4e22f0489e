// Model-specific named events: the event files pmulab reads from \pmulab\events\ on
// its boot volume (written by tools/pmulab-events from Intel's perfmon data; format in
// docs/events.md), the choice of file for each logical processor, and the resolution
// of event names through it before the architectural names (events.h).
//
// ---- Event files ----
//
//   # comment (whole line, or after an event)
//   @match GenuineIntel 06_5E
//   @match GenuineIntel 06_55 stepping=0-4
//   @match GenuineIntel 06_97 core=0x40 native=0x000001
//   0E.01 UOPS_ISSUED.ANY
//   A3.14.CMSK=20.CTR=0-3 CYCLE_ACTIVITY.STALLS_MEM_ANY
//   C6.01.CTR=0-3.MSR_PF=0x11.TakenAlone FRONTEND_RETIRED.DSB_MISS
//   FIXED_CTR1.AnyT CPU_CLK_UNHALTED.THREAD_ANY
//
// The header (one or more @match lines) comes before the first event. A @match line
// names a CPU: the CPUID.0 vendor string, FAMILY_MODEL as display values in hex (the
// "06_5EH" of Intel's documentation, without the H), and optionally a stepping or a
// stepping range (hex), the hybrid core type (CPUID.1AH:EAX[31:24]: 0x40 P-core,
// 0x20 E-core) and the native model ID (CPUID.1AH:EAX[23:0]). Every event line is
//   TOKEN NAME
// with TOKEN one of
//   EE.UU[.MOD]...        event select and UMASK in hex, then modifiers
//                         (case-insensitive): CMSK=n, INV, EDG, AnyT, EQ, UMASK2=n,
//                         CTR=n | CTR=a-b | CTR=0xMASK (the general-purpose counters the
//                         event may use), TakenAlone, and the extra MSRs MSR_RSP0=v,
//                         MSR_RSP1=v (offcore response 0x1A6/0x1A7), MSR_3F6H=v (load
//                         latency threshold), MSR_PF=v (frontend, 0x3F7); an event with
//                         an extra MSR is measured alone (the MSR is shared).
//   FIXED_CTRn[.AnyT][.TakenAlone]
//                         fixed-function counter n; counters 0-3 fall back to their
//                         architectural general-purpose equivalents as the named events
//                         do (C0.00, 3C.00, 3C.01, A4.01).
// NAME uses letters, digits and _ . - : + @ ( ) [ ] (at most 63 characters); names are
// unique within a file, compared without regard to case. Errors are "FILE:LINE: ...".
//
// ---- Choosing the file for a CPU ----
//
// A file is for a logical processor when one of its @match lines matches everything it
// states (vendor, family, model, and stepping, core type, native model ID where given).
// Of the matching files the most specific wins: core type (4) + native model ID (2) +
// stepping (1); two files equally specific for the same CPU are an error naming both.
// On hybrid parts P- and E-cores get their own files.
//
// ---- Name resolution ----
//
// A spec whose token is a name (NAME[:u|:k], not a raw or perf-term spec) is looked up
// in the CPU's event file first, then among the architectural names; everything else
// is parsed by parse_event_spec. An unknown name is Errc::invalid_argument:
//   event 'X' is not in the event file for 06_5EH (\pmulab\events\skylake_core.evt)
//   nor an architectural event
// Event files are only read for commands that resolve names, once per command, on the
// BSP (parsing allocates).
#pragma once

#include "events/events.h"

namespace pmulab {

// Where pmulab looks for event files on its boot volume.
inline constexpr const char kEventFileDir[] = "\\pmulab\\events";
inline constexpr const char kEventFileSuffix[] = ".evt";

// Read access to the files of pmulab's boot volume (EFI) or of a test.
struct FileName {
    char name[128] = {};
};
class FileSource {
public:
    // At most `max_bytes` of a file (all of it by default). Errc::not_found when absent.
    virtual Result<Vec<char>> read(const char* path, usize max_bytes = ~usize(0)) = 0;
    // The names (without the directory) of the files in `dir` ending in `suffix`
    // (case-insensitive), in any order. Errc::not_found when `dir` does not exist.
    virtual Status list(const char* dir, const char* suffix, Vec<FileName>* out) = 0;

protected:
    ~FileSource() = default;
};

// One @match line.
struct EventTableMatch {
    char vendor[13] = {};
    u32 family = 0, model = 0;
    bool has_stepping = false;
    u8 stepping_min = 0, stepping_max = 0;
    bool has_core_type = false;
    u8 core_type = 0;
    bool has_native = false;
    u32 native_model_id = 0;
    u32 line = 0;

    bool matches(const CpuIdentity& id) const;
    // Specificity for choosing among matching files (see the top).
    unsigned score() const { return (has_core_type ? 4 : 0) + (has_native ? 2 : 0) + (has_stepping ? 1 : 0); }
};

struct EventTable {
    char path[160] = {};  // where it was read from, for messages
    Vec<EventTableMatch> matches;
    Vec<Event> events;         // name = the event name; syntax = nanobench (FIXED_CTRn: fixed)
    u32 first_event_line = 0;  // 0 when the text had no event line (header only)

    // The event's token as written in the file (e.g. "A3.14.CMSK=20.CTR=0-3").
    StrView token(usize i) const { return StrView(token_pool_.data() + token_at_[i], token_at_[i + 1] - token_at_[i]); }
    void add(const Event& e, StrView token);
    void clear();

    // The best score of a @match line that matches `id`, or -1.
    int match_score(const CpuIdentity& id) const;
    // Case-insensitive lookup; null when absent.
    const Event* find(StrView name) const;

private:
    Vec<char> token_pool_;
    Vec<u32> token_at_;  // events.size() + 1 offsets into token_pool_
};

// Parses a whole event file. `header_only` stops before the first event (for choosing
// files without parsing them all). Errors: "PATH:LINE: reason".
Status parse_event_table(StrView text, const char* path, EventTable* out, bool header_only = false);

// "06_5EH", "06_97H P-cores", "06_97H E-cores", "06_97H core type 0x30".
void put_table_cpu(StrBuf& out, const CpuIdentity& id);

// The event files of one command: listed and their headers read on first use, each
// file parsed fully the first time a CPU needs it. Allocates: BSP only.
class EventTables {
public:
    // files may be null (no files here: only architectural names resolve).
    explicit EventTables(FileSource* files, const char* dir = kEventFileDir) : files_(files), dir_(dir) {}
    EventTables(const EventTables&) = delete;
    EventTables& operator=(const EventTables&) = delete;

    // The file for a CPU, or null (ok) when none matches. Errors: a bad file (FILE:LINE),
    // a directory that cannot be read, two files equally specific for the CPU.
    Result<const EventTable*> for_cpu(const CpuIdentity& id);

    // Resolves one spec (a name through the CPU's file, else parse_event_spec).
    Result<Event> resolve(StrView spec, const CpuIdentity& id, EventDialect dialect = EventDialect::intel);
    // Resolves a --events list (items as parse_event_list splits them), appending to out.
    // Errors name the item as parse_event_list does.
    Status resolve_list(StrView text, const CpuIdentity& id, Vec<Event>* out,
                        EventDialect dialect = EventDialect::intel);
    // Resolves a nanoBench-style event list file (one spec per line, '#' comments) read
    // from the boot volume, appending to out. Errors: "PATH:LINE: ...".
    Status resolve_file(const char* path, const CpuIdentity& id, Vec<Event>* out,
                        EventDialect dialect = EventDialect::intel);
    // The same for a file's text (tests, or text already read).
    Status resolve_file_text(StrView text, const char* path, const CpuIdentity& id, Vec<Event>* out,
                             EventDialect dialect = EventDialect::intel);

    const char* dir() const { return dir_; }
    // Number of event files found (after the first for_cpu/resolve call).
    usize file_count() const { return files_found_.size(); }

private:
    struct Found {
        char path[160] = {};
        EventTable header;  // matches only
        bool parsed = false;
        EventTable table;  // when parsed
    };
    Status scan();
    Error unknown_name(StrView name, const CpuIdentity& id, const EventTable* t) const;
    // resolve(); *table_error tells errors of the event files from errors of the spec.
    Result<Event> resolve_item(StrView spec, const CpuIdentity& id, EventDialect dialect, bool* table_error);

    friend Status check_event_list_syntax(StrView text, EventDialect dialect);
    FileSource* files_;
    const char* dir_;
    bool syntax_only_ = false;  // check_event_list_syntax: unknown names pass
    bool scanned_ = false;
    Vec<Found> files_found_;
};

// Checks a --events list without knowing the CPU (before any CPU is touched): every
// item is parsed as EventTables::resolve_list would, except that a name neither the
// architectural table nor any event file has been asked about yet passes (it is
// resolved per CPU later). Messages as resolve_list.
Status check_event_list_syntax(StrView text, EventDialect dialect = EventDialect::intel);
// The same before any CPU is known: accepted when some dialect accepts it (Intel,
// AMD, NetBurst); otherwise the Intel dialect's error.
Status check_event_list_syntax_any(StrView text);

// For `pmulab events`: one line per event of a table, "  NAME  TOKEN", in file order.
void list_table_events(StrBuf& out, const EventTable& t);

}  // namespace pmulab
