#include "estuary/settings.hpp"

#include <algorithm>
#include <cctype>
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

// A switch that is on unless set to 0, off, no or false.
bool on_unless_off(const char* name) {
  const std::optional<std::string> v = env(name);
  return !v || !(*v == "0" || *v == "off" || *v == "no" || *v == "false");
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
  s.share_remaps = on_unless_off("ESTUARY_SHARE_REMAPS");
  s.zero_copy = on_unless_off("ESTUARY_ZERO_COPY");
  s.config = env("ESTUARY_CONFIG");
  s.timeline = env("ESTUARY_TIMELINE");
  s.timeline_max_events = env("ESTUARY_TIMELINE_MAX_EVENTS");
  s.datatype_min_run = env("ESTUARY_DATATYPE_MIN_RUN");
  s.nc4_in_turn = env("ESTUARY_NC4_IN_TURN") == std::optional<std::string>("1");
  s.io_fault = env("ESTUARY_IO_FAULT");
  s.io_bandwidth = env("ESTUARY_IO_BANDWIDTH");
  s.simd_generic = env("ESTUARY_SIMD") == std::optional<std::string>("generic");
  s.row_width = on_unless_off("ESTUARY_ROW_WIDTH");
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

bool Settings::timeline_on(bool configured) const {
  if (!timeline) return configured;
  std::string v = *timeline;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  throw Error("ESTUARY_TIMELINE=" + *timeline + " is neither on nor off", "environment",
              "set it to 1 (record the coupling timeline) or 0 (do not), or unset it to follow the configuration");
}

namespace {
// A count from the environment variable `name` (its text `value`), or `fallback` when unset.
std::size_t count_or(const std::optional<std::string>& value, const char* name, std::size_t fallback,
                     const char* what, const char* fix) {
  if (!value) return fallback;
  const char* text = value->c_str();
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0)
    throw Error(std::string(name) + "=" + *value + " is not " + what, "environment", fix);
  return static_cast<std::size_t>(v);
}
}  // namespace

std::size_t Settings::timeline_max_events_or(std::size_t fallback) const {
  return count_or(timeline_max_events, "ESTUARY_TIMELINE_MAX_EVENTS", fallback, "a count of events",
                  "give the number of events a rank may keep (64 bytes each)");
}

std::size_t Settings::datatype_min_run_or(std::size_t fallback) const {
  return count_or(datatype_min_run, "ESTUARY_DATATYPE_MIN_RUN", fallback, "a count of bytes",
                  "give the average run in bytes from which a message moves as a derived datatype (0: never)");
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
