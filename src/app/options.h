// Options as data: each command declares its options once (an OptionSpec table); the
// parser, the help text's option list, the campaign check and `pmulab help --json` are
// all made from that one declaration (docs/options.md).
#pragma once

#include "app/args.h"
#include "base/fmt.h"
#include "base/value.h"

namespace pmulab {

// What an option's value is. JSON names in option_value_name().
enum class OptValue : u8 {
    flag,     // no value
    count,    // a decimal or 0x number in min..max
    size,     // a number with an optional K/M/G suffix, in min..max
    level,    // a small number in min..max ("1 or 2"); with kOptOptionalValue it may be absent
    choice,   // one word of `choices` ("cli|lvt")
    hex,      // machine code as hex bytes
    string,   // free text (a label)
    path,     // a file on the boot volume
    list,     // names or numbers separated by ','
    events,   // event specs (',' or ';' between them)
    cpu,      // a CPU selection (N, all, bsp, lists and ranges, core, atom)
    address,  // an IPv4 address with prefix, or a word
};
const char* option_value_name(OptValue v);

enum : u8 {
    kOptRepeatable = 1,     // may be given more than once (the values accumulate)
    kOptOptionalValue = 2,  // the value may be left out (`choices` then holds the default)
    kOptGroupStart = 4,     // each occurrence starts a new group (and is repeatable)
    kOptInGroup = 8,        // once per group: belongs to the group started before it
};

struct OptionHit;

struct OptionSpec {
    const char* name = nullptr;     // "--unroll"
    const char* alias = nullptr;    // another spelling ("-h" for "--help")
    const char* metavar = nullptr;  // "U": after the name in the help's option list
    OptValue value = OptValue::flag;
    u8 flags = 0;
    u64 min = 0, max = ~u64(0);  // count, size, level
    // The option's lines in the help text after the name column ('\n' between lines);
    // null: the help describes it with another option (then `brief` says it for JSON).
    const char* help = nullptr;
    const char* choices = nullptr;   // choice: "a|b|c"; optional value: the default
    const char* brief = nullptr;     // a one-line help for JSON when `help` is null
    const char* host_asm = nullptr;  // hex code: the host tools' assembly form ("--asm")
    u8 section = 0;                  // which option list of the help text it is shown in
    // Stores the value into the command's options (`target`); errors name the option.
    Status (*apply)(void* target, const OptionHit& hit) = nullptr;
};

// An OptionSpec::apply that runs `stmt` with `o` the command's options (type T) and `h`
// the hit: OPTION_SET(RunOptions, o.raw = true).
#define OPTION_SET(T, stmt)                           \
    [](void* target_, const OptionHit& h) -> Status { \
        T& o = *static_cast<T*>(target_);             \
        (void)h;                                      \
        stmt;                                         \
        return ok_status();                           \
    }

// The number of entries of an option table.
template <typename T, u32 N> constexpr u32 count_of(const T (&)[N]) { return N; }

// One command's declaration. `help` is the help text with "\x01" where the next option
// list goes (section 0, 1, ...); options are listed as "  NAME METAVAR" padded to
// `column` characters (two spaces after a longer one), continuation lines indented to it.
struct CommandOptions {
    const char* command = nullptr;
    const OptionSpec* options = nullptr;
    u32 count = 0;
    const char* help = nullptr;
    u32 column = 18;
    u32 positionals = 0;          // words that are not options the command takes (msr ADDR VALUE)
    const char* group = nullptr;  // the name of the repeated group ("code"), if any
};

// One option as given: its spec, its value (null for a flag or a left-out optional
// value: then `num` holds the default), the number for count/size/level, and the group
// (0-based; for options before the first group start: 0).
struct OptionHit {
    const OptionSpec* spec = nullptr;
    const char* value = nullptr;
    u64 num = 0;
    u32 group = 0;
};

struct ParsedOptions {
    Vec<OptionHit> hits;  // in command-line order
    Vec<const char*> positionals;
    u32 groups = 0;  // how many group starts were given
    const OptionHit* find(const char* name) const;
};

// The global options every command takes (--json, --lava, ...), and whether `word` is one.
inline constexpr u32 kGlobalOptionCount = 5;
extern const OptionSpec kGlobalOptions[kGlobalOptionCount];
bool is_global_option(const char* word);

const OptionSpec* find_option(const CommandOptions& c, StrView name);

// Reads the words of a command line against its declaration: unknown options, missing
// or malformed values, values out of range and a repeated option that is not
// repeatable are Errc::invalid_argument naming the option.
Status parse_options(const CommandOptions& c, Args& args, ParsedOptions* out);
// Calls each hit's `apply` in order.
Status apply_options(const ParsedOptions& p, void* target);
// parse_options, then apply_options into `target` (the command's options); *out keeps
// the positionals.
Status read_options(const CommandOptions& c, Args& args, void* target, ParsedOptions* out);
// read_options into a fresh T, for a command that takes no positionals.
template <typename T> Result<T> read_options_as(const CommandOptions& c, Args& args) {
    T t;
    ParsedOptions parsed;
    PMULAB_TRY(read_options(c, args, &t, &parsed));
    return t;
}

// A value of a count/size/level option, with the messages the parser gives.
Result<u64> parse_option_number(const OptionSpec& s, const char* value);

// The help text: `help` with the option lists filled in.
void put_command_help(StrBuf& b, const CommandOptions& c);
// {"type":"command","command":NAME,"options":[{"name":...,"value":...,...}]}
void command_json(Value& rec, const CommandOptions& c);

}  // namespace pmulab
