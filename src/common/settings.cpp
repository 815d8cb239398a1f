#include "estuary/settings.hpp"

#include <cmath>
#include <cstdlib>
#include <mutex>

#include "estuary/error.hpp"

namespace estuary {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

Settings read() {
  Settings s;
  for (const char* name : {"ESTUARY_TIMEOUT", "ESTUARY_COUPLE_TIMEOUT", "ESTUARY_EXCHANGE_TIMEOUT"})
    if (auto v = env(name)) {
      s.timeout = std::move(v);
      s.timeout_variable = name;
      break;
    }
  s.schedule = env("ESTUARY_SCHEDULE");
  s.ring_k = env("ESTUARY_RING_K");
  // Set but empty also counts here: it turns the cache off, as "off" does.
  if (const char* v = std::getenv("ESTUARY_SCHEDULE_CACHE")) s.schedule_cache = std::string(v);
  const std::optional<std::string> share = env("ESTUARY_SHARE_REMAPS");
  s.share_remaps = !share || !(*share == "0" || *share == "off" || *share == "no" || *share == "false");
  return s;
}

std::mutex& settings_mutex() {
  static std::mutex m;
  return m;
}
Settings& current() {
  static Settings s = read();
  return s;
}

}  // namespace

double Settings::timeout_s(double fallback) const {
  if (!timeout) return fallback;
  char* end = nullptr;
  const double v = std::strtod(timeout->c_str(), &end);
  if (end == timeout->c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw Error(timeout_variable + "=" + *timeout + " is not a number of seconds >= 0", "environment",
                "give the time-out in seconds (0 waits forever), or unset it");
  return v;
}

const Settings& Settings::get() {
  std::lock_guard lock(settings_mutex());
  return current();
}

const Settings& Settings::reload() {
  std::lock_guard lock(settings_mutex());
  current() = read();
  return current();
}

}  // namespace estuary
