// The file where adaptive decisions persist between runs (read and written by one process).
//
// One text file, first line "# estuary schedule cache v1", then one line per decision:
//   <fingerprint, 32 hex> <ranks> <element bytes> <host> <skip mask, hex> <kernel stages> <seconds> <check, 16 hex>
// The check is a hash of the rest of the line, so a truncated or edited line is caught. A file
// whose first line differs is someone else's: it is never trusted and never overwritten. A file
// of ours with a bad line is ignored as a whole and rewritten at the next store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace estuary::detail {

struct CacheKey {
  std::uint64_t fingerprint[2] = {0, 0};
  int ranks = 0;
  int element_bytes = 0;  // bytes of one element of every field moved together
  std::string host;
};

struct CacheValue {
  std::uint64_t skip_mask = 0;
  int kernel_stages = 0;
  double seconds = 0;  // the chosen schedule's time when it was profiled
};

// ESTUARY_SCHEDULE_CACHE when set ("off" or empty: no cache), else
// $XDG_CACHE_HOME/estuary/schedules.txt or ~/.cache/estuary/schedules.txt; "" when none.
std::string default_cache_path();

// The entry for `key`, if the file holds a trustworthy one. Everything suspicious (foreign or
// corrupt file, an entry recorded on another host) is appended to `warnings`, one per line.
std::optional<CacheValue> cache_read(const std::string& path, const CacheKey& key, std::vector<std::string>& warnings);

// Adds or replaces the entry (written to a temporary file, then renamed, so that a reader never
// sees half a file). Returns false, with a warning, when the file cannot be written or is foreign.
bool cache_write(const std::string& path, const CacheKey& key, const CacheValue& value,
                 std::vector<std::string>& warnings);

}  // namespace estuary::detail
