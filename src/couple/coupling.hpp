// One configured coupling as a rank sees it: the source side's LOCTRANS state and send
// protocol, the target side's receive protocol, the mapping and the corrections between.
//
// Protocol (all on the coupling's own communicator, so couplings never mix messages):
//  - at an action time a, the source side finalises LOCTRANS, applies CHECKIN and BLASOLD,
//    forms the CONSERV source integrals (collective over the source ranks), then the source
//    root sends a header {a, Ss...} to every target rank, and Remap::start moves the data;
//  - a target rank's get at a waits (bounded by the time-out) for the header, checks its time,
//    completes Remap::finish, applies CONSERV, BLASNEW and CHECKOUT; the target root then
//    sends an acknowledgement {a} to the source root;
//  - before its next action the source root waits (bounded) for that acknowledgement, and every
//    source rank completes its sends: puts run at most one coupling period ahead.
// The header makes a wrong period or lag an error instead of a wrong answer, and the two
// bounded waits turn a deadlock into an error naming the partner and its last action.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "estuary/conserv.hpp"
#include "estuary/couple.hpp"
#include "estuary/redist.hpp"
#include "estuary/remap.hpp"
#include "couple/couple_io.hpp"
#include "couple/timeline.hpp"

namespace estuary::detail {

// True when a is a whole multiple of p (model times are seconds, often large integers).
bool is_multiple(double a, double p);
std::string time_str(double t);  // "3600" or "3600.5"

struct Coupling {
  const CouplingConfig* cfg = nullptr;
  const CouplingSetup* setup = nullptr;
  std::string src_comp, dst_comp;  // "" for OUTPUT (no target) and INPUT (no source)
  std::string label;               // "SST -> A_SST (namcouple:12)" for messages
  std::string directory;           // where files go

  MPI_Comm comm = MPI_COMM_NULL;      // source and target ranks together
  MPI_Comm src_comm = MPI_COMM_NULL;  // ranks holding source points (this rank's, if one)
  MPI_Comm dst_comm = MPI_COMM_NULL;
  int src_root = 0;             // in comm
  int dst_root = 0;             // in comm
  std::vector<int> dst_ranks;   // in comm
  bool is_src = false, is_dst = false;

  std::int64_t n_src = 0, n_dst = 0;  // this rank's points on each side
  std::int64_t src_global = 0, dst_global = 0;
  std::vector<int> bundle;            // per field position
  int nvalues = 0;                    // sum of bundles: the number of remapped fields
  std::vector<int> src_var, dst_var;  // this rank's variable id per position, -1 if none
  Decomp src_decomp = Decomp::empty(0), dst_decomp = Decomp::empty(0);
  std::vector<std::int64_t> src_dims, dst_dims;  // grid dims for files, {} if unknown
  // OUTPUT/EXPOUT: each side's file, created by the side's ranks at its first record (the grid
  // files it takes coordinates from are written at enddef), closed by finish_all.
  std::unique_ptr<RecordWriter> src_file, dst_file;

  std::unique_ptr<Remap> remap;      // null for OUTPUT and INPUT
  // What decides whether another coupling may share remap (a weight file, this rank's partitions
  // and the options; "" when the weights are not a file), and the label of the coupling whose
  // Remap this one shares ("" if it set up its own).
  std::string remap_key, remap_shared_from;
  // Multi-weight mappings (num_wgts 3 or 4, SCRIPR BICUBIC): the weight columns over the
  // stacked source [x, g1, g2 (, g3)], for puts that carry the model's gradients; null, and
  // ncols 1, otherwise. remap is then the folded matrix, for puts without gradients.
  int ncols = 1;
  std::unique_ptr<Remap> grad_remap;
  std::unique_ptr<Conserv> conserv;  // when CONSERV is configured

  // Source side.
  // Source side.
  std::vector<double> acc;            // LOCTRANS accumulation, nvalues * n_src
  std::vector<int> acc_count;         // puts accumulated, per position
  std::vector<double> pending;        // the finalised values of the next action
  std::vector<double> sbuf;           // the values of the action (after BLASOLD), when they cannot travel from where they are
  // During an action's start: the values it sends when not sbuf (the caller's array or
  // pending). During a get's receive: where the results go when not rbuf (the caller's array).
  const double* src_direct = nullptr;
  double* dst_direct = nullptr;
  std::vector<char> ready;            // per position: finalised for action_time
  // What the puts of the action carry besides values (PutExtras), the same for every position:
  // 0 values only, 1 gradients (grad_pending), 2 a fractional mask (frac_pending).
  int action_mode = 0;
  std::vector<double> grad_pending;   // (ncols - 1) gradients per value field, each n_src
  std::vector<double> frac_pending;   // nvalues * n_src
  std::vector<double> xbuf;           // mode 1: the source of the action in flight
  std::vector<double> frac_sent;      // mode 2: the fractions of the action in flight
  int in_flight_mode = 0;
  double action_time = 0;
  std::vector<double> last_put;       // per position
  bool in_flight = false;             // Remap::start done, finish not yet
  bool acted = false;                 // an action whose completion is due (all source ranks)
  double in_flight_time = 0;
  bool awaiting_ack = false;          // source root: acknowledgement of in_flight_time due
  double last_ack = -1e300;           // source root: last time the target acknowledged
  double last_sent = 0;               // source root: the action time of the last header
  std::vector<double> header;         // source root: the header being sent
  std::vector<MPI_Request> header_reqs;
  std::vector<double> restart_record; // the action kept for the next run (nvalues * n_src)
  bool has_restart_record = false;

  // Target side.
  std::vector<double> rbuf;           // received values, nvalues * n_dst
  double received_time = 0;           // the time rbuf holds
  bool have_received = false;
  std::vector<char> delivered;        // per position: got for received_time
  std::vector<double> last_get;       // per position
  double last_header = -1e300;        // the last action time the source announced
  double ack_value = 0;
  MPI_Request ack_req = MPI_REQUEST_NULL;
  std::vector<double> last_ss;        // CONSERV source integrals of the last get, per value field

  FieldTimers src_timers, dst_timers;  // this rank's side(s) of the coupling
  // Timeline (timeline.hpp): where each side's time went, finer than FieldTimers (whose wait_s
  // on the source side also holds the sends' completion and CHECKIN); put and get record the
  // difference around their call.
  SideClock src_clock, dst_clock;
  std::string log_path;                // the component's log (CHECKIN/CHECKOUT lines)
  double timeout = 600;

  Coupling() = default;
  Coupling(const Coupling&) = delete;
  Coupling& operator=(const Coupling&) = delete;
  ~Coupling();

  // Put of position k at time t; returns the info code.
  Info put(int k, double t, std::span<const double> values, const PutExtras& extra = {});
  Info get(int k, double t, std::span<double> values);
  // What put(k, t, ...) would return, without doing anything (oasis_put_inquire): put takes its
  // info code from here too, so the two cannot disagree.
  Info put_inquire(int k, double t) const;
  // Source side at enddef, for a lag > 0: the action of time 0 with the restart record of the
  // previous run (or zeros when there is none: the caller checked $NNOREST).
  void send_initial(const std::vector<double>& record);
  // Completes what is in flight (source side) and the acknowledgement (target side).
  void finish_all();

 private:
  std::vector<RemapField> remap_fields(int mode = 0);
  std::vector<RemapFracField> frac_fields();
  Remap& remap_of(int mode) { return mode == 1 ? *grad_remap : *remap; }
  // The action's Remap, split-phase: mode 2 (a fractional mask) with frac_fields(), the others
  // with remap_fields(mode).
  void remap_start(int mode);
  void remap_finish(int mode);
  void check_extras(int k, const PutExtras& extra) const;
  // The action of time a with `values` (nvalues * n_src: the pending action or the caller's).
  void act(double a, const double* values);
  // Returns whether there was an action to complete; `also` (2 doubles), when given, is
  // reduced (maximum over the source ranks) in the same collective as the completion's state.
  bool complete_previous(bool terminating = false, double* also = nullptr);
  void receive(double t);
  void read_input(double t);
  void check(const char* what, std::span<const double> v, std::int64_t n, MPI_Comm side, double t);
  void write_output(bool source, double t, const std::vector<double>& values);
};

// "SST:SSS"
std::string join(const std::vector<std::string>& names);
// The names of the value fields of one side in files: the field name, or name_1..name_b for
// the members of a bundle.
std::vector<std::string> value_names(const std::vector<std::string>& fields, const std::vector<int>& bundle);

}  // namespace estuary::detail
