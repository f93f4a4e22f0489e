// Box: unique ownership of a heap object or array (src/base/box.h).
#include <gtest/gtest.h>

#include "base/box.h"

namespace pmulab {
namespace {

struct Counted {
    static int live;
    int v;
    explicit Counted(int x = 7) : v(x) { ++live; }
    ~Counted() { --live; }
};
int Counted::live = 0;

TEST(Box, FreesItsObjectWhenItGoesOutOfScope) {
    {
        Box<Counted> b = make_box<Counted>(3);
        EXPECT_EQ(Counted::live, 1);
        EXPECT_EQ(b->v, 3);
        EXPECT_EQ((*b).v, 3);
    }
    EXPECT_EQ(Counted::live, 0);
}

TEST(Box, MoveTransfersOwnershipOnce) {
    Box<Counted> a = make_box<Counted>();
    Counted* p = a.get();
    Box<Counted> b = move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ(b.get(), p);
    Box<Counted> c = make_box<Counted>(1);
    c = move(b);  // frees c's old object
    EXPECT_EQ(Counted::live, 1);
    EXPECT_EQ(c.get(), p);
    c.reset();
    EXPECT_EQ(Counted::live, 0);
    EXPECT_FALSE(c);
}

TEST(Box, ReleaseGivesUpOwnership) {
    Box<Counted> a = make_box<Counted>();
    Counted* p = a.release();
    EXPECT_FALSE(a);
    EXPECT_EQ(Counted::live, 1);
    delete p;
    EXPECT_EQ(Counted::live, 0);
}

TEST(Box, ArrayFreesEveryElement) {
    {
        Box<Counted[]> arr = make_box_array<Counted>(4);
        EXPECT_EQ(Counted::live, 4);
        arr[2].v = 9;
        EXPECT_EQ(arr.get()[2].v, 9);
    }
    EXPECT_EQ(Counted::live, 0);
}

TEST(Box, BoxesLiveInAVec) {
    {
        Vec<Box<Counted>> v;
        for (int i = 0; i < 20; ++i) v.push(make_box<Counted>(i));  // growth moves the boxes
        EXPECT_EQ(Counted::live, 20);
        EXPECT_EQ(v[19]->v, 19);
    }
    EXPECT_EQ(Counted::live, 0);
}

}  // namespace
}  // namespace pmulab
