// Freestanding basics shared by the EFI binary and the host builds:
// fixed-width integers, a growable vector, a few string helpers.
// Nothing here may depend on a hosted C++ library.
#pragma once

#include <stddef.h>
#include <stdint.h>

#if __STDC_HOSTED__
#include <new>
#else
inline void* operator new(size_t, void* p) noexcept { return p; }
inline void* operator new[](size_t, void* p) noexcept { return p; }
inline void operator delete(void*, void*) noexcept {}
#endif

namespace pmulab {

using u8 = uint8_t;
using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;
using i32 = int32_t;
using i64 = int64_t;
using usize = size_t;

template <typename T> constexpr T min_of(T a, T b) { return a < b ? a : b; }
template <typename T> constexpr T max_of(T a, T b) { return a > b ? a : b; }

template <typename T> struct remove_ref { using type = T; };
template <typename T> struct remove_ref<T&> { using type = T; };
template <typename T> struct remove_ref<T&&> { using type = T; };
template <typename T> constexpr typename remove_ref<T>::type&& move(T&& t) noexcept {
    return static_cast<typename remove_ref<T>::type&&>(t);
}
template <typename T> void swap(T& a, T& b) {
    T t = move(a);
    a = move(b);
    b = move(t);
}

// Mask of the low `bits` bits; bits may be 0..64.
// The value of a hexadecimal digit, or -1 when c is none.
constexpr int hex_digit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

constexpr u64 low_mask(unsigned bits) { return bits >= 64 ? ~u64{0} : ((u64{1} << bits) - 1); }

// The smallest s with 2^s >= n (0 for n <= 1): the ID bits n things need.
constexpr u32 ceil_log2(u32 n) {
    u32 s = 0;
    while (s < 32 && (u64(1) << s) < n) ++s;
    return s;
}

constexpr unsigned popcount64(u64 v) {
    unsigned n = 0;
    for (; v; v &= v - 1) ++n;
    return n;
}

// Memory for the core: operator new over the platform allocator (boot-services pool
// on EFI, malloc on the host). Out of memory is fatal (the platform's panic hook).
[[noreturn]] void panic(const char* msg);

// ---- strings (NUL-terminated, ASCII) ----
usize str_len(const char* s);
bool str_eq(const char* a, const char* b);
bool str_eq_nocase(const char* a, const char* b);
bool str_starts_with(const char* s, const char* prefix);
// Copies at most cap-1 bytes and always terminates (cap > 0).
void str_copy(char* dst, usize cap, const char* src);
char ascii_lower(char c);

// A view of characters that need not be NUL-terminated.
struct StrView {
    const char* ptr = nullptr;
    usize len = 0;
    constexpr StrView() = default;
    constexpr StrView(const char* p, usize n) : ptr(p), len(n) {}
    StrView(const char* z) : ptr(z), len(z ? str_len(z) : 0) {}  // NOLINT(implicit)
    bool empty() const { return len == 0; }
    char operator[](usize i) const { return ptr[i]; }
    bool eq(StrView o) const;
    bool eq_nocase(StrView o) const;
    bool starts_with(StrView p) const;
    StrView sub(usize from, usize n = ~usize{0}) const;
    StrView trim() const;
    // Index of c at or after `from`, or len.
    usize find(char c, usize from = 0) const;
};

// Growable array. Elements are moved on growth. Allocation failure panics.
template <typename T> class Vec {
public:
    Vec() = default;
    Vec(const Vec&) = delete;
    Vec& operator=(const Vec&) = delete;
    Vec(Vec&& o) noexcept : data_(o.data_), size_(o.size_), cap_(o.cap_) {
        o.data_ = nullptr;
        o.size_ = o.cap_ = 0;
    }
    Vec& operator=(Vec&& o) noexcept {
        if (this != &o) {
            destroy();
            data_ = o.data_;
            size_ = o.size_;
            cap_ = o.cap_;
            o.data_ = nullptr;
            o.size_ = o.cap_ = 0;
        }
        return *this;
    }
    ~Vec() { destroy(); }

    usize size() const { return size_; }
    usize capacity() const { return cap_; }
    bool empty() const { return size_ == 0; }
    T* data() { return data_; }
    const T* data() const { return data_; }
    T& operator[](usize i) { return data_[i]; }
    const T& operator[](usize i) const { return data_[i]; }
    T* begin() { return data_; }
    T* end() { return data_ + size_; }
    const T* begin() const { return data_; }
    const T* end() const { return data_ + size_; }
    T& back() { return data_[size_ - 1]; }

    void reserve(usize n) {
        if (n <= cap_) return;
        T* nd = static_cast<T*>(::operator new(n * sizeof(T)));
        if (!nd) panic("out of memory");
        for (usize i = 0; i < size_; ++i) {
            new (&nd[i]) T(move(data_[i]));
            data_[i].~T();
        }
        ::operator delete(data_);
        data_ = nd;
        cap_ = n;
    }
    T& push(const T& v) {
        grow();
        new (&data_[size_]) T(v);
        return data_[size_++];
    }
    T& push(T&& v) {
        grow();
        new (&data_[size_]) T(move(v));
        return data_[size_++];
    }
    // Appends n elements, growing the storage geometrically (at least doubling), so
    // that appending a file chunk by chunk costs linear time, not quadratic.
    void append(const T* p, usize n) {
        if (size_ + n > cap_) reserve(max_of<usize>(size_ + n, cap_ ? cap_ * 2 : 8));
        for (usize i = 0; i < n; ++i) new (&data_[size_++]) T(p[i]);
    }
    // Appends a default-constructed element and returns it.
    T& emplace() {
        grow();
        new (&data_[size_]) T();
        return data_[size_++];
    }
    void resize(usize n) {
        reserve(n);
        while (size_ < n) new (&data_[size_++]) T();
        while (size_ > n) data_[--size_].~T();
    }
    void pop() { data_[--size_].~T(); }
    void clear() {
        while (size_) data_[--size_].~T();
    }

private:
    void grow() {
        if (size_ == cap_) reserve(cap_ ? cap_ * 2 : 8);
    }
    void destroy() {
        clear();
        ::operator delete(data_);
        data_ = nullptr;
        cap_ = 0;
    }
    T* data_ = nullptr;
    usize size_ = 0;
    usize cap_ = 0;
};

// Insertion sort: small inputs only (repetition counts, counter lists).
template <typename T, typename Less> void sort_small(T* a, usize n, Less less) {
    for (usize i = 1; i < n; ++i) {
        T v = a[i];
        usize j = i;
        while (j > 0 && less(v, a[j - 1])) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = v;
    }
}

}  // namespace pmulab
