// Binary (de)serialisation of pass states, so that a unit's state can be
// computed on one machine and merged on another (strata.dask). One
// `fields(ar, x)` function per struct lists its members once and serves both
// directions:
//
//   template <class Ar> void fields(Ar& ar, Foo& x) { ar(x.a, x.b, x.names); }
//
// The byte layout is little-endian host order, for one strata version: the
// bytes travel between workers of one job, they are not a file format.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::analysis::serial {

class Writer {
 public:
  template <class... T>
  void operator()(T&... xs) {
    (put(xs), ...);
  }
  std::string take() { return std::move(buf_); }

 private:
  template <class T>
  void put(T& x) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      raw(&x, sizeof x);
    } else if constexpr (std::is_array_v<T>) {
      for (auto& e : x) put(e);
    } else {
      fields(*this, x);
    }
  }
  void put(std::string& s) {
    put_size(s.size());
    raw(s.data(), s.size());
  }
  template <class T>
  void put(std::vector<T>& v) {
    put_size(v.size());
    for (auto& e : v) put(e);
  }
  template <class A, class B>
  void put(std::pair<A, B>& p) {
    put(p.first);
    put(p.second);
  }
  template <class K, class V>
  void put(std::map<K, V>& m) {
    put_size(m.size());
    for (auto& [k, v] : m) {
      K key = k;
      put(key);
      put(v);
    }
  }
  template <class K, class V>
  void put(std::unordered_map<K, V>& m) {
    std::map<K, V> sorted(m.begin(), m.end());  // same bytes for the same content
    put(sorted);
  }
  template <class K>
  void put(std::set<K>& s) {
    put_size(s.size());
    for (K k : s) put(k);
  }
  void put_size(size_t n) {
    uint64_t v = n;
    raw(&v, sizeof v);
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }

  std::string buf_;
};

class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), end_(data + size) {}
  template <class... T>
  void operator()(T&... xs) {
    (get(xs), ...);
  }
  bool done() const { return p_ == end_; }

 private:
  template <class T>
  void get(T& x) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      raw(&x, sizeof x);
    } else if constexpr (std::is_array_v<T>) {
      for (auto& e : x) get(e);
    } else {
      fields(*this, x);
    }
  }
  void get(std::string& s) {
    size_t n = get_size(1);
    s.assign(p_, n);
    p_ += n;
  }
  template <class T>
  void get(std::vector<T>& v) {
    size_t n = get_size(1);
    v.clear();
    v.resize(n);
    for (auto& e : v) get(e);
  }
  template <class A, class B>
  void get(std::pair<A, B>& p) {
    get(p.first);
    get(p.second);
  }
  template <class K, class V>
  void get(std::map<K, V>& m) {
    size_t n = get_size(1);
    m.clear();
    for (size_t i = 0; i < n; ++i) {
      K k{};
      get(k);
      get(m[k]);
    }
  }
  template <class K, class V>
  void get(std::unordered_map<K, V>& m) {
    std::map<K, V> sorted;
    get(sorted);
    m = std::unordered_map<K, V>(sorted.begin(), sorted.end());
  }
  template <class K>
  void get(std::set<K>& s) {
    size_t n = get_size(1);
    s.clear();
    for (size_t i = 0; i < n; ++i) {
      K k{};
      get(k);
      s.insert(std::move(k));
    }
  }
  // A count of elements each at least `min_bytes` long: bounded by what is
  // left, so corrupt bytes cannot make us allocate without limit.
  size_t get_size(size_t min_bytes) {
    uint64_t n = 0;
    raw(&n, sizeof n);
    if (n > static_cast<uint64_t>(end_ - p_) / min_bytes && n != 0)
      throw std::runtime_error("serialised analysis state is corrupt (a count past its end)");
    return static_cast<size_t>(n);
  }
  void raw(void* dst, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("serialised analysis state is cut short");
    std::memcpy(dst, p_, n);
    p_ += n;
  }

  const char* p_;
  const char* end_;
};

// The bytes of some values, and the values back from them: all the bytes, or
// an error. The writer only reads what fields() lists, so it reads the values
// in place rather than from a copy.
template <class... T>
std::string save(const T&... xs) {
  Writer w;
  w(const_cast<T&>(xs)...);
  return w.take();
}

template <class... T>
void load(std::string_view bytes, T&... xs) {
  Reader r(bytes.data(), bytes.size());
  r(xs...);
  if (!r.done()) throw std::runtime_error("serialised analysis state has trailing bytes");
}

}  // namespace strata::analysis::serial
