// Checked input handling shared by every reader of files and every API taking sizes: integers
// range-checked (no wrap), products of sizes checked for overflow, and configuration text read
// with a size bound and validated as UTF-8 before any parser sees it. Each failure is an
// estuary::Error naming the place (file and line, key, or API call).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "estuary/error.hpp"

namespace estuary::detail {

// The largest configuration file (namcouple, coupling YAML, output YAML) estuary reads: 16 MiB.
// Parsing is linear in the text, so this bounds the time and memory a configuration can take.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{16} << 20;
// Bounds on what a configuration may list (each far above any real set-up).
inline constexpr long long kMaxCouplings = 10000;      // couplings ($STRINGS entries)
inline constexpr long long kMaxFieldsPerSide = 1000;   // fields of one coupling side
inline constexpr long long kMaxOutputFiles = 10000;    // files of an output configuration
inline constexpr long long kMaxFieldsPerFile = 10000;  // fields of one output file

// The whole of `text` as a base-10 integer (optional sign), or nullopt when it is not one or
// does not fit in a long long.
inline std::optional<long long> parse_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno != 0) return std::nullopt;
  return v;
}

// `text` as an integer within [lo, hi]. `fail(what)` throws at the caller's place (file, line,
// key); it is called with "... is not an integer" or "... is outside [lo, hi]".
template <class Fail>
long long integer_in(const std::string& text, long long lo, long long hi, const std::string& what,
                     const Fail& fail) {
  const auto v = parse_integer(text);
  std::string range(1, '[');  // (append: GCC 12 warns about "[" + ..., a false -Wrestrict)
  range.append(std::to_string(lo)).append(", ").append(std::to_string(hi)).append("]");
  if (!v) {
    // Digits that do not fit a 64-bit integer are out of range, not "not an integer".
    const std::size_t digits = text.find_first_not_of("+-") == std::string::npos
                                   ? 0 : text.size() - text.find_first_not_of("+-");
    if (digits > 0 && text.find_first_not_of("0123456789", text.size() - digits) == std::string::npos)
      fail(what + " " + text + " is outside " + range);
    fail("expected " + what + " (an integer), found '" + text + "'");
  }
  if (*v < lo || *v > hi) fail(what + " " + text + " is outside " + range);
  return *v;
}

// a * b for sizes (both >= 0), or nullopt on overflow of int64.
inline std::optional<std::int64_t> mul_size(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b, or Error("<what> overflows ...", where) when it does not fit in int64.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what,
                                const std::string& where) {
  const auto r = mul_size(a, b);
  if (!r)
    throw Error(what + " " + std::to_string(a) + " x " + std::to_string(b) +
                    " overflows a 64-bit integer",
                where, "check the sizes");
  return *r;
}

// a + b, or Error on overflow of int64.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const std::string& what,
                                const std::string& where) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(what + " " + std::to_string(a) + " + " + std::to_string(b) +
                    " overflows a 64-bit integer",
                where, "check the sizes");
  return r;
}

// The byte offset of the first byte of `text` that is not well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos. A NUL byte counts as bad:
// no configuration has one, and the parsers would stop at it.
inline std::size_t first_bad_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c == 0) return i;
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return i;
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

// Checks that `text` (the configuration `path`) is well-formed UTF-8; else throws an Error
// naming the file, the line and the column (1-based, in bytes) of the first bad byte. `label`
// prefixes the path as the reader names it (e.g. "namcouple ", "config ").
inline void check_utf8(std::string_view text, const std::string& path, const std::string& label = {}) {
  const std::size_t bad = first_bad_utf8(text);
  if (bad == std::string_view::npos) return;
  std::size_t line = 1, col = 1;
  for (std::size_t k = 0; k < bad; ++k) {
    if (text[k] == '\n') ++line, col = 1;
    else ++col;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
  throw Error(std::string(text[bad] == 0 ? "a NUL byte" : "a byte that is not UTF-8 (" + std::string(hex) + ")") +
                  " at column " + std::to_string(col),
              label + path + ":" + std::to_string(line),
              "configuration files are UTF-8 text; save the file as UTF-8");
}

// Checks that a configuration text is no larger than kMaxConfigBytes and is UTF-8.
inline void check_config_text(std::string_view text, const std::string& path, const std::string& label = {}) {
  if (text.size() > kMaxConfigBytes)
    throw Error("the configuration is " + std::to_string(text.size()) + " bytes, more than the " +
                    std::to_string(kMaxConfigBytes) + " estuary reads",
                label + path, "configuration files are small text files; check the path");
  check_utf8(text, path, label);
}

// The whole configuration file `path`, checked by check_config_text; nullopt when it cannot be
// opened (the caller names that failure in its own words).
inline std::optional<std::string> read_config_file(const std::string& path, const std::string& label = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) break;  // reported by check_config_text
  }
  if (in.bad()) return std::nullopt;
  check_config_text(text, path, label);
  return text;
}

}  // namespace estuary::detail
