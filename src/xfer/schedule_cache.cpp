#include "xfer/schedule_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "estuary/settings.hpp"

namespace estuary::detail {
namespace {

constexpr const char* kHeader = "# estuary schedule cache v1";
constexpr std::size_t kMaxEntries = 1000;  // oldest dropped first, so the file stays small

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string hex(std::uint64_t v, int width) {
  char b[32];
  std::snprintf(b, sizeof b, "%0*llx", width, static_cast<unsigned long long>(v));
  return b;
}

// The line's key part: what must match for an entry to apply.
std::string key_text(const CacheKey& k, bool with_host) {
  std::string s = hex(k.fingerprint[0], 16) + hex(k.fingerprint[1], 16) + " " + std::to_string(k.ranks) + " " +
                  std::to_string(k.element_bytes);
  return with_host ? s + " " + k.host : s;
}

std::string line_of(const CacheKey& k, const CacheValue& v) {
  char secs[64];
  std::snprintf(secs, sizeof secs, "%.9g", v.seconds);
  const std::string body = key_text(k, true) + " " + hex(v.skip_mask, 1) + " " +
                           std::to_string(v.kernel_stages) + " " + secs;
  return body + " " + hex(fnv1a(body), 16);
}

struct Parsed {
  std::string key_no_host, host;
  CacheValue value;
};

// One line back to its parts; nullopt when it does not parse or its check fails.
std::optional<Parsed> parse(const std::string& line) {
  const std::size_t cut = line.find_last_of(' ');
  if (cut == std::string::npos) return std::nullopt;
  const std::string body = line.substr(0, cut), check = line.substr(cut + 1);
  if (check != hex(fnv1a(body), 16)) return std::nullopt;
  std::istringstream in(body);
  std::string fp, ranks, bytes, mask;
  Parsed p;
  if (!(in >> fp >> ranks >> bytes >> p.host >> mask >> p.value.kernel_stages >> p.value.seconds)) return std::nullopt;
  if (fp.size() != 32) return std::nullopt;
  try {
    p.value.skip_mask = std::stoull(mask, nullptr, 16);
  } catch (...) {
    return std::nullopt;
  }
  p.key_no_host = fp + " " + ranks + " " + bytes;
  return p;
}

enum class FileState { missing, ours, corrupt, foreign };

// Reads the file's entry lines; says whether they can be trusted.
FileState load(const std::string& path, std::vector<std::string>& lines, std::vector<std::string>& warnings) {
  std::ifstream f(path);
  if (!f) return FileState::missing;
  std::string first, line;
  if (!std::getline(f, first) || first != kHeader) {
    warnings.push_back("schedule cache " + path + " is not an estuary schedule cache (first line is not '" +
                       kHeader + "'); ignoring it and leaving it untouched");
    return FileState::foreign;
  }
  int number = 1;
  while (std::getline(f, line)) {
    ++number;
    if (line.empty()) continue;
    if (!parse(line)) {
      warnings.push_back("schedule cache " + path + " is corrupt at line " + std::to_string(number) +
                         "; ignoring the whole file (it is rewritten at the next decision)");
      lines.clear();
      return FileState::corrupt;
    }
    lines.push_back(line);
  }
  return FileState::ours;
}

}  // namespace

std::string default_cache_path() {
  if (const std::optional<std::string>& setting = Settings::get().schedule_cache) {
    const std::string& v = *setting;
    return v == "off" || v == "none" ? "" : v;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/estuary/schedules.txt";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/estuary/schedules.txt";
  return "";
}

std::optional<CacheValue> cache_read(const std::string& path, const CacheKey& key, std::vector<std::string>& warnings) {
  std::vector<std::string> lines;
  if (path.empty() || load(path, lines, warnings) != FileState::ours) return std::nullopt;
  const std::string want = key_text(key, false);
  std::optional<CacheValue> found;
  for (const std::string& line : lines) {  // the last matching line is the newest
    const std::optional<Parsed> p = parse(line);
    if (p->key_no_host != want) continue;
    if (p->host == key.host) {
      found = p->value;
    } else {
      warnings.push_back("schedule cache " + path + " has a decision for this plan recorded on host " + p->host +
                         ", not " + key.host + "; not trusting it here");
    }
  }
  return found;
}

bool cache_write(const std::string& path, const CacheKey& key, const CacheValue& value,
                 std::vector<std::string>& warnings) {
  if (path.empty()) return false;
  std::vector<std::string> lines, ignored;
  if (load(path, lines, ignored) == FileState::foreign) {
    warnings.push_back("schedule cache " + path + " is not an estuary schedule cache; not writing to it");
    return false;
  }
  const std::string mine = key_text(key, true) + " ";
  std::erase_if(lines, [&](const std::string& l) { return l.rfind(mine, 0) == 0; });
  lines.push_back(line_of(key, value));
  if (lines.size() > kMaxEntries) lines.erase(lines.begin(), lines.end() - kMaxEntries);
  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  // A name of our own, so concurrent writers (tests running side by side) never mix.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kHeader << "\n";
    for (const std::string& l : lines) out << l << "\n";
    if (!out) {
      warnings.push_back("cannot write schedule cache " + tmp);
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    warnings.push_back("cannot replace schedule cache " + path + ": " + ec.message());
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

}  // namespace estuary::detail
