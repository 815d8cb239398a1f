// Routing keyed items to the ranks that want their keys — how links (keyed by destination row
// or source column) and partial sums (keyed by row) reach the ranks that apply or add them.
//
// Built from Plan/Redist only: items go first to a directory rank (keys cut in p blocks), which
// sorts them by key, then to every rank whose wanted list holds the key. Set-up memory per rank
// is O(items held + key_space / p), never the whole item list.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace estuary::detail {

// Parallel arrays of items: a key in [0, key_space) plus integer and real payload columns.
struct KeyedItems {
  std::vector<std::int64_t> key;
  std::vector<std::vector<std::int64_t>> ints;
  std::vector<std::vector<double>> reals;
  std::size_t size() const { return key.size(); }
};

// Collective. `wanted`: this rank's keys, sorted and unique. Returns, for each wanted key in
// order, every item with that key, ordered by the items' global order (rank order, then local
// order); offsets[w] .. offsets[w+1] are the items of wanted[w]. An item is delivered to every
// rank that wants its key, and dropped when none does.
KeyedItems route_by_key(KeyedItems items, std::int64_t key_space, const std::vector<std::int64_t>& wanted,
                        MPI_Comm comm, std::vector<std::int64_t>& offsets, const std::string& algorithm = {});

}  // namespace estuary::detail
