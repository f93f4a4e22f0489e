// Event text as users write it: a UTF-8 byte-order mark on an event file (as on
// pmulab.cfg), and error messages that arrive whole, never cut at the Error buffer.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "events/event_files.h"

using namespace pmulab;

namespace {

std::string sample_evt() {
    auto p = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "data" / "events" /
             "skylake_core.evt";
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// A message that filled the buffer was cut (mid-word, as "...or event=").
void expect_whole(const Error& e, const std::string& ends_with) {
    size_t n = strnlen(e.msg, sizeof e.msg);
    EXPECT_LT(n, sizeof e.msg - 1) << "message fills the buffer: " << e.msg;
    std::string m(e.msg, n);
    EXPECT_TRUE(m.size() >= ends_with.size() &&
                m.compare(m.size() - ends_with.size(), ends_with.size(), ends_with) == 0)
        << "message does not end with '" << ends_with << "': " << m;
}

}  // namespace

TEST(EventFileText, ByteOrderMarkIsAcceptedLikeInPmulabCfg) {
    std::string plain = sample_evt();
    ASSERT_FALSE(plain.empty());
    EventTable a, b;
    ASSERT_TRUE(parse_event_table(StrView(plain.data(), plain.size()), "a.evt", &a).ok());
    std::string bom = "\xEF\xBB\xBF" + plain;
    Status s = parse_event_table(StrView(bom.data(), bom.size()), "b.evt", &b);
    ASSERT_TRUE(s.ok()) << s.error().msg;
    EXPECT_EQ(a.events.size(), b.events.size());
    EXPECT_GT(b.events.size(), 10u);
    // Only at the very start: a BOM elsewhere is still not text.
    std::string mid = plain + "\xEF\xBB\xBF"
                              "X 0E.01\n";
    EXPECT_FALSE(parse_event_table(StrView(mid.data(), mid.size()), "c.evt", &b).ok());
}

TEST(EventFileText, LongestEventMessagesArriveWhole) {
    // The unknown-name message inside a list with a long neighbour (`events --check foo`).
    Vec<Event> ev;
    Status s = parse_event_list("INST_RETIRED.ANY,cycles:u,foo", &ev);
    ASSERT_FALSE(s.ok());
    expect_whole(s.error(), "or event=0x0e,umask=0x01) (at offset 0)");
    // The same in an event file with a long path: the path and line number come first.
    std::string text = "FIXED_CTR0 INST_RETIRED.ANY\nfoo_bar_baz_quux_unknown_event_name_that_is_long\n";
    Status f = parse_event_file(StrView(text.data(), text.size()),
                                "\\pmulab\\events\\a_rather_long_event_list_file_name_for_this_test.cfg", &ev);
    ASSERT_FALSE(f.ok());
    expect_whole(f.error(), ")");
    // With context added on the way up, as commands do.
    Error ctx = s.error().with_context("events --check: spec list 'INST_RETIRED.ANY,cycles:u,foo'");
    expect_whole(ctx, "or event=0x0e,umask=0x01) (at offset 0)");
    EXPECT_GT(strlen(ctx.msg), 260u);  // longer than the old 240-byte buffer
}
