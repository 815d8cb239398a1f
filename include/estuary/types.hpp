// Element types estuary moves, and a field: one source and one destination buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>

namespace estuary {

enum class Type { f64, f32, i32, i64 };

constexpr std::size_t size_of(Type t) {
  return (t == Type::f64 || t == Type::i64) ? 8 : 4;
}
const char* name_of(Type t);

template <class T>
constexpr Type type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, double>) return Type::f64;
  else if constexpr (std::is_same_v<U, float>) return Type::f32;
  else if constexpr (std::is_same_v<U, std::int32_t>) return Type::i32;
  else if constexpr (std::is_same_v<U, std::int64_t>) return Type::i64;
  else static_assert(sizeof(U) == 0, "estuary moves double, float, int32_t and int64_t");
}

// One field of an exchange: the source buffer (laid out as the source Decomp) and the
// destination buffer (laid out as the destination Decomp). Counts are in elements.
struct Field {
  Type type = Type::f64;
  const void* src = nullptr;
  std::int64_t src_count = 0;
  void* dst = nullptr;
  std::int64_t dst_count = 0;

  Field() = default;
  Field(Type t, const void* s, std::int64_t ns, void* d, std::int64_t nd)
      : type(t), src(s), src_count(ns), dst(d), dst_count(nd) {}
  // Any contiguous containers (std::vector, std::span, std::array) of one element type.
  template <class S, class D>
    requires requires(const S& s, D& d) { std::data(s); std::data(d); }
  Field(const S& s, D& d)
      : type(type_of<std::remove_pointer_t<decltype(std::data(d))>>()),
        src(std::data(s)), src_count(static_cast<std::int64_t>(std::size(s))),
        dst(std::data(d)), dst_count(static_cast<std::int64_t>(std::size(d))) {
    static_assert(std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(std::data(s))>>,
                                 std::remove_pointer_t<decltype(std::data(d))>>,
                  "source and destination of a field must have the same element type");
  }
};

}  // namespace estuary
