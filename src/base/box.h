// Box<T>: the one owner of a heap object (unique ownership, move-only), and
// Box<T[]> of a heap array. Memory comes from operator new/new[] as a plain `new`
// does (base.h: the platform allocator, out of memory is fatal), so a Box replaces a
// raw new/delete pair and frees its object on every path.
#pragma once

#include "base/base.h"

namespace pmulab {

// How a Box frees what it owns: delete for an object, delete[] for an array.
template <typename T> struct BoxKind {
    using Elem = T;
    static void free(T* p) { delete p; }
};
template <typename T> struct BoxKind<T[]> {
    using Elem = T;
    static void free(T* p) { delete[] p; }
};

template <typename T> class Box {
    using E = typename BoxKind<T>::Elem;

public:
    Box() = default;
    explicit Box(E* p) : p_(p) {}
    Box(const Box&) = delete;
    Box& operator=(const Box&) = delete;
    Box(Box&& o) noexcept : p_(o.release()) {}
    Box& operator=(Box&& o) noexcept {
        if (this != &o) reset(o.release());
        return *this;
    }
    ~Box() { reset(); }

    E* get() const { return p_; }
    E& operator*() const { return *p_; }
    E* operator->() const { return p_; }
    E& operator[](usize i) const { return p_[i]; }  // Box<T[]>
    explicit operator bool() const { return p_ != nullptr; }
    // Gives up ownership without freeing.
    E* release() {
        E* p = p_;
        p_ = nullptr;
        return p;
    }
    void reset(E* p = nullptr) {
        E* old = p_;
        p_ = p;
        if (old) BoxKind<T>::free(old);
    }

private:
    E* p_ = nullptr;
};

// make_box<T>(args...): new T(args...), boxed (value-initialised without args).
template <typename T, typename... Args> Box<T> make_box(Args&&... args) {
    return Box<T>(new T(static_cast<Args&&>(args)...));
}

// make_box_array<T>(n): new T[n] (default-initialised, as a plain new[]), boxed.
template <typename T> Box<T[]> make_box_array(usize n) { return Box<T[]>(new T[n]); }

}  // namespace pmulab
