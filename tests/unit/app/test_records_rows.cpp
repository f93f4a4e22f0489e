// The CSV summary of records with one array of objects (run --cycle-by-cycle's "cycles"):
// one row per element, the record's other fields repeated.
#include <gtest/gtest.h>

#include <string>

#include "app/records.h"
#include "base/json.h"

using namespace pmulab;

TEST(Records, CsvRowPerElementOfAnArrayOfObjects) {
    Value v;
    ASSERT_TRUE(
        json_parse(StrView(R"({"type":"cycle_by_cycle","cpu":0,"bench":"code","events":["instructions","D1.08"],)"
                           R"("cycles":[{"cycle":0,"values":{"instructions":1,"D1.08":0}},)"
                           R"({"cycle":1,"values":{"instructions":0,"D1.08":null}}]})"),
                   &v)
            .ok());
    CsvSummary sum;
    sum.add(v);
    StrBuf csv;
    ASSERT_TRUE(sum.write(&csv).ok());
    EXPECT_EQ(std::string(csv.c_str(), csv.size()),
              "type,cpu,bench,events,cycles.cycle,cycles.values.instructions,cycles.values.D1.08\r\n"
              "cycle_by_cycle,0,code,instructions;D1.08,0,1,0\r\n"
              "cycle_by_cycle,0,code,instructions;D1.08,1,0,\r\n");
}
