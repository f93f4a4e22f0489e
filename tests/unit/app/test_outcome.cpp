// The command outcome (app/out.h): how reported failures become one exit status.
#include <gtest/gtest.h>

#include "app/out.h"

using namespace pmulab;

TEST(Outcome, NothingReportedIsSuccess) {
    Outcome o;
    EXPECT_EQ(o.worst(), Errc::ok);
    EXPECT_EQ(o.exit_status(), kExitOk);
    o.note(Errc::ok);
    EXPECT_EQ(o.exit_status(), kExitOk);
}

TEST(Outcome, TheFirstFailureDecides) {
    Outcome o;
    o.note(Errc::fault);
    o.note(Errc::invalid_argument);
    o.note(Errc::unsupported);  // a later disabled CPU does not turn a fault into "unsupported"
    EXPECT_EQ(o.worst(), Errc::fault);
    EXPECT_EQ(o.exit_status(), kExitFailure);
}

TEST(Outcome, UnsupportedYieldsToALaterRealFailure) {
    Outcome o;
    o.note(Errc::unsupported);
    EXPECT_EQ(o.exit_status(), kExitUnsupported);
    o.note(Errc::unsupported);
    EXPECT_EQ(o.exit_status(), kExitUnsupported);
    o.note(Errc::invalid_argument);
    EXPECT_EQ(o.exit_status(), kExitUsage);
    o.note(Errc::fault);
    EXPECT_EQ(o.exit_status(), kExitUsage);
}

TEST(Outcome, ErrorClassesMapToTheDocumentedStatuses) {
    EXPECT_EQ(exit_status_for(Errc::invalid_argument), kExitUsage);
    EXPECT_EQ(exit_status_for(Errc::unsupported), kExitUnsupported);
    EXPECT_EQ(exit_status_for(Errc::internal), kExitInternal);
    EXPECT_EQ(exit_status_for(Errc::fault), kExitFailure);
    EXPECT_EQ(exit_status_for(Errc::io), kExitFailure);
    EXPECT_EQ(exit_status_for(Errc::not_found), kExitFailure);
}
