// Settings — estuary's ESTUARY_* environment variables, read in one place, once: the first
// Settings::get() takes a snapshot that every part then uses (not getenv deep in
// constructors). A program (or test) that changes the environment afterwards calls
// Settings::reload(). docs/configuration.md lists the variables.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace estuary {

struct Settings {
  // One time-out for every bounded wait: an exchange stage (Exchange::finish), the coupler's
  // puts, gets and terminate. ESTUARY_TIMEOUT; its former names ESTUARY_COUPLE_TIMEOUT and
  // ESTUARY_EXCHANGE_TIMEOUT remain aliases (when several are set, ESTUARY_TIMEOUT wins, then
  // ESTUARY_COUPLE_TIMEOUT). The text as given; nullopt when none is set.
  std::optional<std::string> timeout;
  std::string timeout_variable;  // the variable that gave `timeout`
  std::optional<std::string> schedule;        // ESTUARY_SCHEDULE: the default schedule algorithm
  std::optional<std::string> ring_k;          // ESTUARY_RING_K: ring-k's messages per stage
  std::optional<std::string> schedule_cache;  // ESTUARY_SCHEDULE_CACHE: adaptive's file, or off
  bool share_remaps = true;  // ESTUARY_SHARE_REMAPS=0: every coupling sets up its own Remap
  // ESTUARY_ZERO_COPY=0: every exchange message goes through the receive buffer, also where it
  // could go straight into the user's array, and no stage is packed interleaved (same results;
  // for comparing the two).
  bool zero_copy = true;
  // ESTUARY_DATATYPE_MIN_RUN: the average contiguous run, in bytes, from which a one-field
  // exchange message moves as an MPI derived datatype straight from the source (in run()) and
  // into the destination instead of being packed and unpacked; 0 never. Off with zero-copy.
  // The text as given; datatype_min_run_or() reads it.
  std::optional<std::string> datatype_min_run;

  // The coupler: ESTUARY_CONFIG names the configuration file when the program gives none;
  // ESTUARY_TIMELINE (on/off) overrides the configuration's timeline switch; and
  // ESTUARY_TIMELINE_MAX_EVENTS bounds the events a rank keeps. The texts as given.
  std::optional<std::string> config;
  std::optional<std::string> timeline;
  std::optional<std::string> timeline_max_events;

  // The I/O layer: ESTUARY_NC4_IN_TURN=1 makes the netCDF-4 writers take turns even where
  // netCDF has parallel HDF5; ESTUARY_IO_FAULT=record=R[,writer=W] injects a write failure
  // (the fault tests).
  bool nc4_in_turn = false;
  std::optional<std::string> io_fault;
  // ESTUARY_IO_BANDWIDTH: one writer's bandwidth in MB/s for the I/O layer's automatic writer
  // count, instead of measuring it (output.write_bandwidth wins). The text as given.
  std::optional<std::string> io_bandwidth;

  // ESTUARY_SIMD=generic keeps the reproducible sums off the AVX2 kernel (same results, for
  // comparing the two).
  bool simd_generic = false;
  // ESTUARY_ROW_WIDTH=0: a Remap whose rows all have the same number of links reads the row
  // pointers as any other instead of finding rows by number, and rows of varying length are
  // summed one link a step instead of two (same results; for comparison).
  bool row_width = true;

  // The time-out in seconds (0: wait forever), or `fallback` when none is set. Throws
  // estuary::Error naming the variable when it is not a number >= 0.
  double timeout_s(double fallback) const;

  // ESTUARY_TIMELINE as a switch: `configured` when unset. Throws estuary::Error naming the
  // variable for a value that is neither on nor off.
  bool timeline_on(bool configured) const;
  // ESTUARY_TIMELINE_MAX_EVENTS as a count, or `fallback` when unset. Throws estuary::Error
  // naming the variable when it is not a count.
  std::size_t timeline_max_events_or(std::size_t fallback) const;
  // ESTUARY_DATATYPE_MIN_RUN in bytes, or `fallback` when unset. Throws estuary::Error naming
  // the variable when it is not a count.
  std::size_t datatype_min_run_or(std::size_t fallback) const;

  static const Settings& get();
  static const Settings& reload();
};

}  // namespace estuary
