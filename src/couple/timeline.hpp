// The coupler's timeline (OASIS's LUCIA, docs/user-guide.md "Timeline (LUCIA)"): every put and
// get a rank makes, with its model time, when it entered and left (wall clock, seconds from a
// start common to the whole coupled run), and how much of it went to waiting for the partner
// component, to the remap's arithmetic, to moving the data and to files. Written at terminate,
// one file per component (timeline_<component>.jsonl in the run folder), which
// `estuary timeline RUN_DIR` analyses as LUCIA does, plots and converts to a Chrome trace.
//
// Cost: recording is a store of 64 bytes into memory set aside in advance; nothing is allocated
// per event (a new block only every few thousand events, never a copy of the old ones) and
// nothing is written before terminate, so the run's own timings are what they would be without
// it (bench/pingpong --timeline both; docs/performance.md).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estuary/couple.hpp"

namespace estuary::detail {

struct Coupling;

// Seconds one side of a coupling has spent, cumulative since enddef; an event takes the
// difference around its call. Measured by the coupling at the few points where it waits or
// moves data (coupling.cpp), whether or not the timeline records: a handful of clock readings
// per coupling time.
struct SideClock {
  double wait = 0;      // blocked on the partner: a get for its header, a put for its acknowledgement
  double remap = 0;     // in Remap::start/finish minus their data movement: the products
  double transfer = 0;  // moving data: the remap's exchanges and completing the sends of the last action
  double io = 0;        // OUTPUT/EXPOUT files written, INPUT files read
};

inline SideClock operator+(const SideClock& a, const SideClock& b) {
  return {a.wait + b.wait, a.remap + b.remap, a.transfer + b.transfer, a.io + b.io};
}
inline SideClock operator-(const SideClock& a, const SideClock& b) {
  return {a.wait - b.wait, a.remap - b.remap, a.transfer - b.transfer, a.io - b.io};
}

enum class TimelineKind : std::uint8_t { put, get, enddef, terminate, restart };
const char* name_of(TimelineKind k);  // "put", "get", "enddef", "terminate", "restart"

// One event, 64 bytes. Wall times are seconds from the common start.
struct TimelineEvent {
  double time;            // model time of a put/get (0 for the component's own events)
  double enter, leave;    // wall clock
  double wait, remap, transfer, io;
  std::int32_t coupling;  // index of the coupling in the configuration, -1 for the component's events
  std::int16_t field;     // position of the field in a multi-field coupling
  TimelineKind kind;
  std::int8_t info;       // the put/get's info code (estuary::Info), 0 otherwise
};

// ESTUARY_TIMELINE (1/true/yes/on, 0/false/no/off; unset or empty: no override) over what the
// configuration says. Throws estuary::Error on another value.
bool timeline_wanted(bool configured);

class Timeline {
 public:
  // Local: describes the component's couplings (`couplings`: all of the run's, as every rank
  // sets them up) and sets aside the first block of memory, sized for the puts and gets this
  // rank makes at coupling times. Throws on a bad ESTUARY_TIMELINE_MAX_EVENTS.
  Timeline(const std::string& component, const CouplingSetup& setup,
           const std::vector<std::unique_ptr<Coupling>>& couplings, MPI_Comm comm);
  // Collective over `world` (every rank of the run, each with a timeline): the common start is
  // the end of a barrier there, so that the components' clocks line up to within the barrier's
  // exit skew. `enddef_enter`: this rank's MPI_Wtime when enddef began (the enddef event, which
  // ends at the common start).
  void start(MPI_Comm world, double enddef_enter);

  // The hot path: no allocation except, every few thousand events, a new block.
  void record(TimelineKind kind, int coupling, int field, double time, double enter, double leave,
              const SideClock& spent, Info info) {
    if (fill_ == end_ && !grow()) {
      ++dropped_;
      return;
    }
    *fill_++ = TimelineEvent{time,        enter - origin_, leave - origin_, spent.wait,
                             spent.remap, spent.transfer,  spent.io,        static_cast<std::int32_t>(coupling),
                             static_cast<std::int16_t>(field), kind, static_cast<std::int8_t>(info)};
  }

  // Collective over the component: writes <directory>/timeline_<component>.jsonl with MPI-IO,
  // every rank its own lines at its own offset (under a temporary name, renamed when complete).
  // Returns "" or what went wrong (the same on every rank of the component); never throws, as
  // a run whose restarts are written should not fail over its diagnostics.
  std::string write(const std::string& directory);

  std::size_t events() const;
  std::size_t dropped() const { return dropped_; }
  std::string path(const std::string& directory) const;

 private:
  bool grow();
  std::string header() const;
  std::string lines() const;  // this rank's: its summary, then its events

  std::string component_;
  MPI_Comm comm_ = MPI_COMM_NULL;  // the component's (not owned)
  int rank_ = 0, ranks_ = 1, world_rank_ = 0;
  std::string host_;
  double origin_ = 0;      // MPI_Wtime at the common start
  double start_unix_ = 0;  // the same instant, seconds since 1970 (the run's date, for people)
  double runtime_ = 0;
  std::string couplings_json_;  // the description of the component's couplings
  std::vector<std::unique_ptr<TimelineEvent[]>> blocks_;
  std::vector<std::size_t> block_size_;
  TimelineEvent* fill_ = nullptr;
  TimelineEvent* end_ = nullptr;
  std::size_t next_block_ = 0;  // events of the next block
  std::size_t capacity_ = 0, max_events_ = 0, dropped_ = 0;
};

}  // namespace estuary::detail
