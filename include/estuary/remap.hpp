// Remap — applies a distributed sparse weight matrix to fields: dst = W src.
//
// Set-up (collective, once) spreads the links to where they are applied and builds the
// exchanges; run() then moves and multiplies any number of fields at once, many times.
//
// Two choices, as OASIS3-MCT offers them (paper 000, Sect. 2.3):
//  - order bfb: the source values travel to where the weights of each destination row live,
//    and each row is summed in the link order of the file (rank order, then local order, for
//    links given in memory). The result is bit-identical for any rank count and decomposition.
//  - order sum: each link lives with its source value; partial sums of each row are formed
//    there, then travel to the row's owners and are added (ascending source rank). Fewer values
//    may travel, but the rounding depends on the decomposition.
//  - location dst: the work happens on the ranks that own destination points (bfb: each rank
//    owns the rows of its destination points, nothing travels after the product; sum: source
//    values first travel to a block decomposition of the source grid over those ranks).
//  - location src: the work happens on the ranks that own source points (sum: each link lives
//    with its source value, nothing travels before the product; bfb: rows live in a block
//    decomposition of the destination grid over those ranks, and results travel afterwards).
// Every movement is an estuary Redist, with all fields of a run in one exchange.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/names.hpp"
#include "estuary/weights.hpp"

namespace estuary {

class Redist;

enum class RemapLocation { src, dst };
enum class RemapOrder { bfb, sum };
// "src"/"dst" and "bfb"/"sum", and back (estuary/names.hpp; unknown names throw estuary::Error).
// The configuration readers also take OASIS's "opt" for sum (couple/config_checks.hpp).
const char* name_of(RemapLocation l);
const char* name_of(RemapOrder o);
template <>
RemapLocation from_name<RemapLocation>(std::string_view name);
template <>
RemapOrder from_name<RemapOrder>(std::string_view name);

// How a row's links make its value. weighted_sum: sum of w x (every method but one).
// largest_area_fraction: CDO's remaplaf (genlaf files): the links' source values in classes of
// equal value, each class's weights summed in link order; the row takes the value of the class
// with the largest sum (the first such on a tie, as CDO) — for categories (land use, soil
// type), where a weighted sum would mix them. Needs order bfb (a row's links in one place).
enum class RemapRule { weighted_sum, largest_area_fraction };

struct RemapOptions {
  RemapLocation location = RemapLocation::dst;
  RemapOrder order = RemapOrder::bfb;
  double unmapped_value = 0.0;  // destination points that no link reaches
  std::string algorithm;        // schedule of every exchange; empty: ESTUARY_SCHEDULE or p2p
  // For the split-phase start()/finish() (the coupler sets it): the exchange that crosses from
  // the source to the destination ranks is one P2P stage whatever `algorithm` says, and the
  // exchange within one side — at src with bfb the gather among the source ranks, at dst with
  // sum the partial sums among the destination ranks — runs `algorithm` (butterfly, adaptive,
  // ...) over that side's ranks alone, all of which take part in the call that runs it.
  bool split_phase = false;
  // Set from the file by the weight-file constructor (is_largest_area_fraction), else as given.
  RemapRule rule = RemapRule::weighted_sum;
};

// One field: its source values (laid out as the source Decomp) and destination values.
struct RemapField {
  std::span<const double> src;
  std::span<double> dst;
};

// A field with a fractional mask (YAC's yac_cput_frac, the coupler's put with a fraction):
// dst = W (f x) / W f where W f != 0, else 0. f (0..1 per source value) as src.
struct RemapFracField {
  std::span<const double> src;       // x
  std::span<const double> fraction;  // f
  std::span<double> dst;
};

// Per-rank figures of a Remap (local; no communication).
struct RemapStats {
  std::int64_t links = 0;       // links applied on this rank
  std::int64_t rows = 0;        // rows (bfb) or partial rows (sum) formed here
  std::int64_t gathered = 0;    // source values received before the product
  std::int64_t partials = 0;    // values received after the product (partial sums or results)
  int exchanges = 0;            // Redists per run: 1 or 2
  int row_width = 0;            // links in every row formed here that has any, when all have as many, else 0
  bool row_gaps = false;        // with row_width: some rows formed here have no links (masked targets)
  bool row_two_step = false;    // rows of varying link count, summed two links a step
  // run() reads this rank's source values where they are, because its gather would only copy
  // them (one rank, or each row's sources on the rank that forms it): no copy before the product.
  bool source_in_place = false;
};

class Remap {
 public:
  // Collective. Reads the weight file in slices (read_weights, checked against the sizes of
  // src and dst) and spreads the links; src and dst decompose the two grids' point numbering.
  Remap(const std::string& weight_file, const Decomp& src, const Decomp& dst, MPI_Comm comm,
        RemapOptions options = {});
  // Collective. `links`: this rank's share of the matrix, any distribution. Their global order
  // (rank order, then local order) is the bfb summation order.
  Remap(const Links& links, const Decomp& src, const Decomp& dst, MPI_Comm comm, RemapOptions options = {});
  ~Remap();
  Remap(Remap&&) noexcept;
  Remap& operator=(Remap&&) noexcept;

  // A Remap that shares this one's set-up — the weights, plans, schedules and sparse matrix,
  // kept once in memory, nothing read or routed again — with executors and buffers of its own,
  // so that both may have a transfer in flight at once (ten couplings of one weight file).
  // Local; prepare() the share (collective) before its first start() or finish().
  Remap share() const;
  // Remaps set up in this process (from links or a weight file; shares are not counted), for
  // tests and benchmarks that check that sharing happened.
  static std::int64_t setups();

  // Collective. Every field's src has src.size() values and dst dst.size() values.
  void run(std::span<const RemapField> fields);
  void run(std::span<const double> src, std::span<double> dst);

  // Collective. Fields with a fractional mask: the same values as run() of the two fields
  // [f x, f] followed by the division, bit for bit, in fewer passes: x and f travel (as two
  // fields would), f x is formed once per gathered source value (or per link where nothing is
  // gathered), one pass over the links forms W (f x) and W f together, and the division is done
  // where each row is complete (at src with bfb before the results travel, so that one value per
  // row moves, not two). A rank whose fractions are all 1 forms W x alone (W f: the row sums).
  void run(std::span<const RemapFracField> fields);
  // Split-phase form, for coupling, where the two sides reach the exchange at different times.
  // start() does the source side's share (products at src, moves among the source ranks) and
  // starts the one move that crosses from source to destination ranks; finish() completes that
  // move and does the destination side's share. Ranks holding source points call start, ranks
  // holding destination points call finish (a rank holding both calls both, start first); no
  // call waits for ranks of the other side beyond the crossing move itself. The buffers of
  // `fields` must be the same in both calls and stay valid in between. Needs a single-stage
  // schedule (p2p, the default) for the exchange that crosses: a staged one forwards through
  // ranks that may be busy elsewhere; with RemapOptions::split_phase the exchange within one
  // side may be staged.
  void start(std::span<const RemapField> fields);
  void finish(std::span<const RemapField> fields);
  // The split-phase form of run(fields with a fractional mask); prepare(2 * fields.size())
  // (and fields.size() for location src with order bfb) beforehand.
  void start(std::span<const RemapFracField> fields);
  void finish(std::span<const RemapFracField> fields);
  // Collective: sets up the executors for `nfields` fields, which start() and finish() need
  // (they are not collective and cannot set up anything).
  void prepare(int nfields);

  const RemapOptions& options() const;
  RemapStats stats() const;
  // Seconds this rank has spent in the Remap's data movement (its exchanges' run, start and
  // finish: packing, messages, waiting for them, unpacking), cumulative; the rest of run,
  // start and finish is the products. The coupler's timeline tells the two apart with it.
  double move_seconds() const;
  // The same time split by step, summed over the Remap's exchanges (their ExchangeTimers):
  // packing (with the local copies), waiting for messages, unpacking; cumulative.
  struct MoveTimers {
    double pack_s = 0, wait_s = 0, unpack_s = 0;
  };
  MoveTimers move_timers() const;

  // The exchanges run() executes, in order, for inspection (`estuary inspect schedule
  // --config`): "gather" moves source values to the ranks holding the links, "after" moves
  // results or partial sums to the destination's ranks; either may be absent (the same on
  // every rank). Peers in their schedules are ranks of the communicator the Remap was given —
  // but for the exchange within one side that RemapOptions::split_phase with a staged algorithm
  // builds over that side's ranks: it is there on those ranks only, its peers ranked among them.
  struct Exchange {
    const char* name;
    const Redist* redist;
  };
  std::vector<Exchange> exchanges() const;

 private:
  struct Setup;
  struct Impl;
  Remap();
  std::unique_ptr<Impl> impl_;
};

}  // namespace estuary
