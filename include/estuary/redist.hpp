// Redist — the one-object way to move data between two decompositions:
// plan + schedule + an executor per list of field types, set up once, run many times.
#pragma once

#include <mpi.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "estuary/decomp.hpp"
#include "estuary/exchange.hpp"
#include "estuary/plan.hpp"
#include "estuary/schedule.hpp"

namespace estuary {

struct RedistOptions {
  std::string algorithm;  // empty: ESTUARY_SCHEDULE or "p2p"
  PlanOptions plan;
};

class Redist {
 public:
  // Collective over comm.
  Redist(const Decomp& src, const Decomp& dst, MPI_Comm comm, RedistOptions options = {});

  const Plan& plan() const { return plan_; }
  const Schedule& schedule() const { return *schedule_; }

  // Moves the fields (collective). The first run with a new list of types sets up its
  // executor; later runs with the same types reuse it.
  void run(std::span<const Field> fields);
  void run(std::initializer_list<Field> fields) { run(std::span<const Field>(fields)); }
  // Split-phase form: only one exchange may be in flight per Redist.
  void start(std::span<const Field> fields);
  void start(std::initializer_list<Field> fields) { start(std::span<const Field>(fields)); }
  void finish();

  // Collective: sets up the executor for this list of field types now. The first run with a
  // new list does it implicitly, which is collective too; callers whose ranks reach run() or
  // start() at different times (the coupler's split-phase transfers) prepare at set-up.
  Exchange& prepare(std::vector<Type> types);
  // An executor of its own, for callers that keep several exchanges in flight.
  Exchange make_exchange(std::vector<Type> types) const;

  // The way back: a Redist from this one's destination to its source, built from the transposed
  // plan (Plan::transposed: no directory, no matching) with the same algorithm. Collective (the
  // algorithm may tune). Fields passed to it have the destination decomposition as `src` and
  // the source decomposition as `dst`; source elements that no destination holds are left as
  // they are. Build it once and keep it: it is as reusable as the forward one.
  Redist reverse() const;

 private:
  Redist(Plan plan, std::string algorithm);
  std::string algorithm_;
  Exchange& exchange_for(std::span<const Field> fields);
  Plan plan_;
  std::shared_ptr<const Schedule> schedule_;
  std::map<std::vector<Type>, Exchange> exchanges_;
  Exchange* in_flight_ = nullptr;
};

}  // namespace estuary
