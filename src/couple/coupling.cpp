// The put/get protocol of one coupling (see coupling.hpp).
#include "couple/coupling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ctime>

#include "common/mpi_util.hpp"
#include "common/time_accumulator.hpp"
#include "couple/couple_io.hpp"
#include "estuary/error.hpp"

namespace estuary::detail {

namespace {
constexpr int kHeaderTag = 811;
constexpr int kAckTag = 812;
using i64 = std::int64_t;

// LOCTRANS's operations are the time accumulator's (common/time_accumulator.hpp), which the I/O
// layer's temporal operations use too.
TimeOp time_op(LocTrans t) {
  switch (t) {
    case LocTrans::instant: return TimeOp::instant;
    case LocTrans::accumul: return TimeOp::sum;
    case LocTrans::average: return TimeOp::average;
    case LocTrans::t_min: return TimeOp::minimum;
    case LocTrans::t_max: return TimeOp::maximum;
  }
  return TimeOp::instant;
}

// The Remap's moves since `before` (its MoveTimers), added to t's pack, wire and unpack.
void add_moves(FieldTimers& t, const Remap& r, const Remap::MoveTimers& before) {
  const Remap::MoveTimers now = r.move_timers();
  t.pack_s += now.pack_s - before.pack_s;
  t.wire_s += now.wait_s - before.wait_s;
  t.unpack_s += now.unpack_s - before.unpack_s;
}

}  // namespace

bool is_multiple(double a, double p) {
  const double q = a / p;
  return std::fabs(q - std::round(q)) < 1e-9;
}

std::string time_str(double t) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", t);
  return buf;
}

Coupling::~Coupling() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  for (MPI_Comm* c : {&src_comm, &dst_comm, &comm})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

// The fields of an action's Remap run: mode 0 the values; mode 1 per value field the stacked
// source [x, g1, ...] (ncols * n_src) in xbuf. (Mode 2: frac_fields.)
std::vector<RemapField> Coupling::remap_fields(int mode) {
  const auto sz = [](i64 n) { return static_cast<std::size_t>(n); };
  sbuf.resize(sz(nvalues * n_src));
  rbuf.resize(sz(nvalues * n_dst));
  if (mode == 1) {
    std::vector<RemapField> f(sz(nvalues));
    xbuf.resize(sz(nvalues * ncols * n_src));
    double* dst = dst_direct ? dst_direct : rbuf.data();
    for (int v = 0; v < nvalues; ++v)
      f[sz(v)] = {std::span<const double>(xbuf.data() + v * ncols * n_src, sz(ncols * n_src)),
                  std::span<double>(dst + v * n_dst, sz(n_dst))};
    return f;
  }
  const double* src = src_direct ? src_direct : sbuf.data();
  double* dst = dst_direct ? dst_direct : rbuf.data();
  std::vector<RemapField> f(static_cast<std::size_t>(nvalues));
  for (int v = 0; v < nvalues; ++v)
    f[static_cast<std::size_t>(v)] = {std::span<const double>(src + v * n_src, static_cast<std::size_t>(n_src)),
                                      std::span<double>(dst + v * n_dst, static_cast<std::size_t>(n_dst))};
  return f;
}

// Mode 2 (YAC's fractional mask): per value field x (sbuf) and f (frac_sent), the quotient
// W (f x) / W f straight into rbuf; Remap forms f x and divides in its own passes.
std::vector<RemapFracField> Coupling::frac_fields() {
  const auto sz = [](i64 n) { return static_cast<std::size_t>(n); };
  sbuf.resize(sz(nvalues * n_src));
  frac_sent.resize(sz(nvalues * n_src));
  rbuf.resize(sz(nvalues * n_dst));
  double* dst = dst_direct ? dst_direct : rbuf.data();
  std::vector<RemapFracField> f(sz(nvalues));
  for (int v = 0; v < nvalues; ++v)
    f[sz(v)] = {std::span<const double>(sbuf.data() + v * n_src, sz(n_src)),
                std::span<const double>(frac_sent.data() + v * n_src, sz(n_src)),
                std::span<double>(dst + v * n_dst, sz(n_dst))};
  return f;
}

void Coupling::remap_start(int mode) {
  if (mode == 2) remap->start(frac_fields());
  else remap_of(mode).start(remap_fields(mode));
}

void Coupling::remap_finish(int mode) {
  if (mode == 2) remap->finish(frac_fields());
  else remap_of(mode).finish(remap_fields(mode));
}

// The first value field of position k and its count.
static std::pair<i64, i64> slot(const std::vector<int>& bundle, int k) {
  i64 first = 0;
  for (int j = 0; j < k; ++j) first += bundle[static_cast<std::size_t>(j)];
  return {first, bundle[static_cast<std::size_t>(k)]};
}

// A put's gradients or fraction (PutExtras), checked against the coupling before anything is
// kept: every rank of the component checks its own put (puts are local).
void Coupling::check_extras(int k, const PutExtras& extra) const {
  const std::string& name = cfg->src_fields[static_cast<std::size_t>(k)];
  const i64 want = slot(bundle, k).second * n_src;
  const std::string where = "component " + src_comp + ", " + label + ", " + world_rank_label();
  const auto sized = [&](std::size_t got, const std::string& what) {
    if (static_cast<i64>(got) != want)
      throw Error("put of " + name + " passes " + std::to_string(got) + " values for its " + what + ", expected " +
                      std::to_string(want),
                  where, "give one value per local point and bundle member, as for the field");
  };
  const std::size_t g = extra.gradients.size();
  const bool frac = extra.fraction.data() != nullptr;
  if (g > 0) {
    if (ncols == 1)
      throw Error("put of " + name + " passes " + std::to_string(g) +
                      " gradient field(s), but the weights of this coupling have one column",
                  where,
                  "pass gradients only to couplings with multi-weight mappings (a num_wgts 3 or 4 file, SCRIPR BICUBIC)");
    if (static_cast<int>(g) != ncols - 1)
      throw Error("put of " + name + " passes " + std::to_string(g) + " gradient field(s), the weights have " +
                      std::to_string(ncols) + " columns",
                  where, "pass " + std::to_string(ncols - 1) + " gradients (OASIS's fld2..fld" + std::to_string(ncols) + ")");
    for (std::size_t j = 0; j < g; ++j) sized(extra.gradients[j].size(), "gradient " + std::to_string(j + 1));
  }
  if (frac) {
    sized(extra.fraction.size(), "fraction");
    for (std::size_t i = 0; i < extra.fraction.size(); ++i)
      if (!(extra.fraction[i] >= 0.0 && extra.fraction[i] <= 1.0))
        throw Error("put of " + name + " passes the fraction " + std::to_string(extra.fraction[i]) + " at local point " +
                        std::to_string(i % static_cast<std::size_t>(std::max<i64>(n_src, 1))),
                    where, "give fractions between 0 and 1");
    if (cfg->conserv)
      throw Error("put of " + name + " passes a fractional mask to a coupling with CONSERV", where,
                  "the global correction does not take a fractional mask: remove CONSERV or the fraction");
  }
  if (g > 0 && frac)
    throw Error("put of " + name + " passes both gradients and a fractional mask", where, "pass one or the other");
  if ((g > 0 || frac) && cfg->loctrans.value_or(LocTrans::instant) != LocTrans::instant)
    throw Error("put of " + name + " passes " + (g > 0 ? "gradients" : "a fractional mask") +
                    " to a coupling with a LOCTRANS accumulation",
                where, "use LOCTRANS INSTANT (or none) for couplings whose puts carry gradients or fractions");
}

Info Coupling::put(int k, double t, std::span<const double> values, const PutExtras& extra) {
  const auto kk = static_cast<std::size_t>(k);
  const std::string& name = cfg->src_fields[kk];
  const auto [first, nb] = slot(bundle, k);
  const i64 n = n_src;
  if (static_cast<i64>(values.size()) != nb * n)
    throw Error("put of " + name + " passes " + std::to_string(values.size()) + " values, the partition holds " +
                    std::to_string(n) + " points" + (nb > 1 ? " x bundle " + std::to_string(nb) : ""),
                "component " + src_comp + ", " + world_rank_label(), "pass one value per local point and bundle member");
  check_extras(k, extra);
  const int mode = !extra.gradients.empty() ? 1 : extra.fraction.data() != nullptr ? 2 : 0;
  if (t <= last_put[kk])
    throw Error("put of " + name + " at t=" + time_str(t) +
                    (t == last_put[kk] ? " called twice" : " after a put at t=" + time_str(last_put[kk])),
                "component " + src_comp + ", " + label, "put each field once per time, times increasing");
  last_put[kk] = t;
  const LocTrans lt = cfg->loctrans.value_or(LocTrans::instant);
  const double a = t + cfg->lag;
  const bool action = a >= 0 && is_multiple(a, cfg->period);
  double* acc_k = lt == LocTrans::instant ? nullptr : acc.data() + first * n;
  const std::size_t m = static_cast<std::size_t>(nb * n);
  const detail::TimeAccumulator accumulator(time_op(lt));
  if (lt != LocTrans::instant) {
    int& c = acc_count[kk];
    accumulator.add({acc_k, m}, values.first(m), c);
    ++c;
  }
  if (!action) return put_inquire(k, t);

  if (!std::any_of(ready.begin(), ready.end(), [](char r) { return r != 0; })) action_time = a;
  else if (action_time != a)
    throw Error("the fields of a multi-field coupling are put at different coupling times (t=" + time_str(a - cfg->lag) +
                    " for " + name + ", t=" + time_str(action_time - cfg->lag) + " for another)",
                "component " + src_comp + ", " + label, "put every field of the coupling at each coupling time");
  if (ready[kk])
    throw Error("put of " + name + " twice for the coupling time " + time_str(a), "component " + src_comp + ", " + label);
  const bool first_of_action = !std::any_of(ready.begin(), ready.end(), [](char r) { return r != 0; });
  if (first_of_action) action_mode = mode;
  else if (action_mode != mode) {
    static const char* const what[] = {"values only", "gradients", "a fractional mask"};
    throw Error("put of " + name + " at t=" + time_str(t) + " passes " + what[mode] +
                    ", another field of the coupling " + what[action_mode],
                "component " + src_comp + ", " + label, "pass the same extras (gradients, fraction) with every field of a coupling");
  }
  if (mode == 1) {  // gradient j of value field v at (v * (ncols - 1) + j) * n
    const i64 g = ncols - 1;
    grad_pending.resize(static_cast<std::size_t>(nvalues * g * n));
    for (i64 b = 0; b < nb; ++b)
      for (i64 j = 0; j < g; ++j)
        std::copy_n(extra.gradients[static_cast<std::size_t>(j)].begin() + b * n, n,
                    grad_pending.begin() + ((first + b) * g + j) * n);
  } else if (mode == 2) {
    frac_pending.resize(static_cast<std::size_t>(nvalues * n));
    std::copy(extra.fraction.begin(), extra.fraction.end(), frac_pending.begin() + first * n);
  }
  const bool out = cfg->status == FieldStatus::expout || cfg->status == FieldStatus::output;
  const bool to_restart = a >= setup->runtime;
  const Info info = put_inquire(k, t);
  // One position holding the whole action, instantaneous, sent now: the Remap reads the
  // caller's values themselves (it has packed or multiplied them when start returns), no copy.
  if (lt == LocTrans::instant && mode == 0 && ready.size() == 1 && !out && !to_restart) {
    act(a, values.data());
    return info;
  }
  // The value of this action for position k, straight into its place in the action buffer.
  pending.resize(static_cast<std::size_t>(nvalues * n));
  double* slot_k = pending.data() + first * n;
  if (lt == LocTrans::instant) {
    const double c0 = MPI_Wtime();
    std::copy(values.begin(), values.end(), slot_k);
    src_timers.copy_s += MPI_Wtime() - c0;
  } else {
    accumulator.result({acc_k, m}, acc_count[kk], {slot_k, m});
    acc_count[kk] = 0;
  }
  ready[kk] = 1;

  if (std::all_of(ready.begin(), ready.end(), [](char r) { return r != 0; })) {
    std::fill(ready.begin(), ready.end(), 0);
    if (out) {
      const double w0 = MPI_Wtime();
      write_output(true, a - cfg->lag, pending);
      src_clock.io += MPI_Wtime() - w0;
    }
    if (cfg->status == FieldStatus::output) return info;
    if (to_restart) {
      restart_record = pending;
      has_restart_record = true;
    } else {
      act(a, pending.data());
    }
  }
  return info;
}

Info Coupling::put_inquire(int, double t) const {
  const LocTrans lt = cfg->loctrans.value_or(LocTrans::instant);
  const double a = t + cfg->lag;
  if (!(a >= 0 && is_multiple(a, cfg->period))) return lt == LocTrans::instant ? Info::ok : Info::loctrans;
  const bool out = cfg->status == FieldStatus::expout || cfg->status == FieldStatus::output;
  if (cfg->status == FieldStatus::output) return Info::output;
  if (a >= setup->runtime) return out ? Info::torestout : Info::torest;  // kept for the next run
  return out ? Info::sentout : Info::sent;
}

// The source side of an action: wait for the previous one, transform, announce, send.
void Coupling::act(double a, const double* values) {
  const double t0 = MPI_Wtime();
  // Every source rank must run the same Remap with the same fields: the action's mode agreed
  // over them (a rank without points may pass no extras, e.g. a null fraction; it follows).
  // The smallest and the largest mode said, as maxima of {-mode, mode}; in the agreement on
  // the previous action's completion when there is one (one collective per action, not two).
  const bool says = n_src > 0 || action_mode > 0;
  double said[2] = {says ? -static_cast<double>(action_mode) : -99.0, says ? static_cast<double>(action_mode) : -1.0};
  if (!complete_previous(false, said))
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, said, 2, MPI_DOUBLE, MPI_MAX, src_comm), "MPI_Allreduce");
  const double a0 = MPI_Wtime();
  {
    int m[2] = {static_cast<int>(-said[0]), static_cast<int>(-said[1])};
    if (m[0] == 99) m[0] = m[1] = 0;
    if (m[0] != -m[1])
      throw Error("the ranks of " + src_comp + " put " + join(cfg->src_fields) + " for the coupling time " + time_str(a) +
                      " with different extras (some with gradients or a fraction, some without)",
                  "component " + src_comp + ", " + label, "pass the same extras on every rank of the component");
    action_mode = m[0];
  }
  const double c0 = MPI_Wtime();
  src_timers.sync_s += c0 - a0;
  const int mode = action_mode;
  const std::size_t nv = static_cast<std::size_t>(nvalues * n_src);
  // The values travel from where they are (the caller's array or the pending action) unless
  // BLASOLD changes them or another mode stacks them: then from sbuf.
  if (cfg->blasold || mode != 0) {
    sbuf.resize(nv);
    std::copy_n(values, nv, sbuf.begin());
    src_direct = nullptr;
  } else {
    src_direct = values;
  }
  src_timers.copy_s += MPI_Wtime() - c0;
  auto fields = remap_fields();
  if (cfg->checkin) check("CHECKIN", {fields.empty() ? values : fields[0].src.data(), nv}, n_src, src_comm, a);
  if (cfg->blasold)
    for (double& x : sbuf) x = cfg->blasold->scale * x + cfg->blasold->add;
  const auto sz = [](i64 x) { return static_cast<std::size_t>(x); };
  if (mode == 1) {  // per value field: x, then its gradients (BLASOLD's scale applies to them)
    const i64 g = ncols - 1;
    const double scale = cfg->blasold ? cfg->blasold->scale : 1.0;
    xbuf.resize(sz(nvalues * ncols * n_src));
    grad_pending.resize(sz(nvalues * g * n_src));
    for (i64 v = 0; v < nvalues; ++v) {
      double* out = xbuf.data() + v * ncols * n_src;
      std::copy_n(sbuf.begin() + v * n_src, n_src, out);
      for (i64 i = 0; i < g * n_src; ++i) out[n_src + i] = scale * grad_pending[sz(v * g * n_src + i)];
    }
  } else if (mode == 2) {  // the fractions travel with the values (frac_fields); the next puts refill frac_pending
    frac_pending.resize(sz(nvalues * n_src));
    std::swap(frac_pending, frac_sent);
  }
  const double h0 = MPI_Wtime();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  header.assign({a, static_cast<double>(mode)});
  if (conserv) {
    std::vector<std::span<const double>> s;
    for (const RemapField& f : fields) s.push_back(f.src);
    const std::vector<double> ss = conserv->source_integrals(s, src_comm);
    header.insert(header.end(), ss.begin(), ss.end());
  }
  if (rank == src_root) {
    header_reqs.assign(dst_ranks.size(), MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < dst_ranks.size(); ++i)
      check_mpi(MPI_Isend(header.data(), static_cast<int>(header.size()), MPI_DOUBLE, dst_ranks[i], kHeaderTag, comm,
                          &header_reqs[i]),
                "MPI_Isend");
    awaiting_ack = true;
    last_sent = a;
  }
  Remap& r = remap_of(mode);
  const Remap::MoveTimers mt = r.move_timers();
  const double t1 = MPI_Wtime(), moved = r.move_seconds();
  src_timers.sync_s += t1 - h0;  // the header (and CONSERV's integrals, when asked)
  remap_start(mode);
  src_direct = nullptr;  // read by start only: the values may change from here on
  in_flight_mode = mode;
  in_flight = true;
  acted = true;
  in_flight_time = a;
  const double started = MPI_Wtime() - t1, moves = r.move_seconds() - moved;
  src_timers.remap_s += started;
  src_clock.transfer += moves;
  src_clock.remap += started - moves;
  src_timers.product_s += started - moves;
  add_moves(src_timers, r, mt);
  src_timers.exchanges += 1;
  src_timers.wait_s += t1 - t0;
}

// Before the next action: the target must have received the previous one.
bool Coupling::complete_previous(bool terminating, double* also) {
  if (!acted) return false;
  const double w0 = MPI_Wtime();
  // 0: fine; 1: the target did not acknowledge in time; 2: this rank also gets the coupling and
  // has not got the previous time; 3: the target acknowledged another time. Agreed over the
  // source ranks, so that none of them goes on into the next action's moves alone.
  double state[4] = {0, last_ack, also ? also[0] : 0.0, also ? also[1] : 0.0};
  double got = 0;
  if (in_flight && is_dst) state[0] = 2;
  if (awaiting_ack && state[0] == 0) {  // the source root
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Irecv(&got, 1, MPI_DOUBLE, dst_root, kAckTag, comm, &req), "MPI_Irecv");
    if (!wait_bounded(req, timeout)) {
      state[0] = 1;
    } else {
      awaiting_ack = false;
      state[0] = got == last_sent ? 0 : 3;
      last_ack = state[1] = got;
    }
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, state, also ? 4 : 2, MPI_DOUBLE, MPI_MAX, src_comm), "MPI_Allreduce");
  if (also) also[0] = state[2], also[1] = state[3];
  // Until here the source ranks wait for the target's acknowledgement (the root in the receive,
  // the others in the agreement with it): the partner's time, not this side's.
  const double w1 = MPI_Wtime();
  src_clock.wait += w1 - w0;
  src_timers.sync_s += w1 - w0;
  const std::string where = "component " + src_comp + ", " + label;
  const std::string doing = terminating ? std::string("terminate") : "put for the coupling time " + time_str(action_time);
  if (state[0] == 2)
    throw Error(doing + " before the get of the coupling time " +
                    time_str(in_flight_time) + " on a rank that both puts and gets the coupling",
                where, "on ranks that both put and get a coupling, get each coupling time before putting the next");
  if (state[0] == 1)
    throw Error((terminating ? "terminate" : "put of " + join(cfg->src_fields) + " for the coupling time " + time_str(action_time)) +
                    " waited " + time_str(timeout) + " s for component " + dst_comp + " to get the coupling time " +
                    time_str(in_flight_time) + " (" + join(cfg->dst_fields) + "); " + dst_comp + " last got it " +
                    (state[1] > -1e299 ? "at t=" + time_str(state[1]) : "never"),
                where,
                "check that " + dst_comp + " gets the field at every coupling time and does not wait for " + src_comp +
                    " (deadlock); the time-out is `timeout` in the configuration or ESTUARY_TIMEOUT");
  if (state[0] == 3)
    throw Error(dst_comp + " acknowledged the coupling time " + time_str(state[1]) + ", expected " + time_str(in_flight_time),
                where, "both components must use the same period and lag");
  if (!header_reqs.empty()) {
    check_mpi(MPI_Waitall(static_cast<int>(header_reqs.size()), header_reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    header_reqs.clear();
  }
  src_timers.sync_s += MPI_Wtime() - w1;
  double products = 0;  // of the finish: on a source rank that also holds target points
  if (in_flight) {
    Remap& r = remap_of(in_flight_mode);
    const Remap::MoveTimers mt = r.move_timers();
    const double moved = r.move_seconds(), f0 = MPI_Wtime();
    remap_finish(in_flight_mode);
    in_flight = false;
    products = MPI_Wtime() - f0 - (r.move_seconds() - moved);
    src_timers.product_s += products;
    add_moves(src_timers, r, mt);
  }
  // The rest completed the sends of the previous action (headers and data): transfer.
  src_clock.remap += products;
  src_clock.transfer += MPI_Wtime() - w1 - products;
  acted = false;
  return true;
}

Info Coupling::get(int k, double t, std::span<double> values) {
  const auto kk = static_cast<std::size_t>(k);
  const std::string& name = cfg->dst_fields[kk];
  const auto [first, nb] = slot(bundle, k);
  const i64 n = n_dst;
  if (static_cast<i64>(values.size()) != nb * n)
    throw Error("get of " + name + " passes " + std::to_string(values.size()) + " values, the partition holds " +
                    std::to_string(n) + " points" + (nb > 1 ? " x bundle " + std::to_string(nb) : ""),
                "component " + dst_comp + ", " + world_rank_label(), "pass one value per local point and bundle member");
  if (t <= last_get[kk])
    throw Error("get of " + name + " at t=" + time_str(t) +
                    (t == last_get[kk] ? " called twice" : " after a get at t=" + time_str(last_get[kk])),
                "component " + dst_comp + ", " + label, "get each field once per time, times increasing");
  last_get[kk] = t;
  if (t < 0 || t >= setup->runtime || !is_multiple(t, cfg->period)) return Info::ok;
  const bool out = cfg->status == FieldStatus::expout;
  Info info = Info::recvd;
  // One position holding the whole action, not written to a file, on a rank that does not
  // also put the coupling (its start, at the put, gave the exchanges rbuf as their target): the
  // Remap's results go straight into the caller's array, no copy.
  bool direct = false;
  if (!have_received || received_time != t) {
    if (cfg->status == FieldStatus::input) {
      const double r0 = MPI_Wtime();
      read_input(t);
      dst_clock.io += MPI_Wtime() - r0;
    } else {
      direct = delivered.size() == 1 && cfg->status != FieldStatus::expout && !is_src;
      if (direct) dst_direct = values.data();
      try {
        receive(t);
      } catch (...) {
        dst_direct = nullptr;
        throw;
      }
      dst_direct = nullptr;
      // rbuf does not hold this time: the next get must receive (the same in any case with
      // one position, whose next get is for another time).
      if (direct) have_received = false;
    }
  }
  if (cfg->status == FieldStatus::input) {
    info = Info::input;
  } else {
    info = t - cfg->lag < 0 ? (out ? Info::fromrestout : Info::fromrest) : (out ? Info::recvout : Info::recvd);
  }
  if (delivered[kk])
    throw Error("get of " + name + " at t=" + time_str(t) + " called twice", "component " + dst_comp + ", " + label);
  delivered[kk] = 1;
  if (direct) return info;
  const double c0 = MPI_Wtime();
  std::copy(rbuf.begin() + first * n, rbuf.begin() + (first + nb) * n, values.begin());
  dst_timers.copy_s += MPI_Wtime() - c0;
  return info;
}

void Coupling::receive(double t) {
  const double t0 = MPI_Wtime();
  MPI_Request req = MPI_REQUEST_NULL;
  std::vector<double> h(2 + (conserv ? static_cast<std::size_t>(nvalues) : 0));  // {a, mode, Ss...}
  check_mpi(MPI_Irecv(h.data(), static_cast<int>(h.size()), MPI_DOUBLE, src_root, kHeaderTag, comm, &req), "MPI_Irecv");
  if (!wait_bounded(req, timeout))
    throw Error("get of " + join(cfg->dst_fields) + " at t=" + time_str(t) + " waited " + time_str(timeout) +
                    " s for component " + src_comp + " to put " + join(cfg->src_fields) +
                    (cfg->lag != 0 ? " at t=" + time_str(t - cfg->lag) + " (lag " + time_str(cfg->lag) + ")" : "") +
                    "; " + src_comp + " last put it " +
                    (last_header > -1e299 ? "for t=" + time_str(last_header) : "never"),
                "component " + dst_comp + ", " + label,
                "check that " + src_comp + " puts the field at every coupling time and does not wait for " + dst_comp +
                    " (deadlock); the time-out is `timeout` in the configuration or ESTUARY_TIMEOUT");
  last_header = h[0];
  if (h[0] != t)
    throw Error(src_comp + " sent " + join(cfg->src_fields) + " for the coupling time " + time_str(h[0]) + ", " +
                    dst_comp + " gets it for " + time_str(t),
                "component " + dst_comp + ", " + label,
                "both sides must use the same coupling period and lag, and get every coupling time");
  const int mode = static_cast<int>(h[1]);
  Remap& r = remap_of(mode);
  const Remap::MoveTimers mt = r.move_timers();
  const double t1 = MPI_Wtime(), moved = r.move_seconds();
  auto fields = remap_fields();
  remap_finish(mode);  // mode 2: W (f x) / W f, the unmapped value (0) where W f = 0
  if (is_src) in_flight = false;  // this rank's own sends completed with it
  const double t2 = MPI_Wtime(), moves = r.move_seconds() - moved;
  dst_clock.wait += t1 - t0;
  dst_clock.transfer += moves;
  dst_clock.remap += t2 - t1 - moves;
  dst_timers.sync_s += t1 - t0;
  dst_timers.product_s += t2 - t1 - moves;
  add_moves(dst_timers, r, mt);
  if (conserv) {
    std::vector<std::span<double>> d;
    for (const RemapField& f : fields) d.push_back(f.dst);
    last_ss.assign(h.begin() + 2, h.end());
    conserv->correct(cfg->conserv->mode, last_ss, d, dst_comm);
  }
  const std::span<double> got(dst_direct ? dst_direct : rbuf.data(), static_cast<std::size_t>(nvalues * n_dst));
  if (cfg->blasnew)
    for (double& x : got) x = cfg->blasnew->scale * x + cfg->blasnew->add;
  if (cfg->checkout) check("CHECKOUT", got, n_dst, dst_comm, t);
  if (cfg->status == FieldStatus::expout) {
    const double w0 = MPI_Wtime();
    write_output(false, t, rbuf);
    dst_clock.io += MPI_Wtime() - w0;
  }
  const double k0 = MPI_Wtime();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == dst_root) {
    if (ack_req != MPI_REQUEST_NULL) check_mpi(MPI_Wait(&ack_req, MPI_STATUS_IGNORE), "MPI_Wait");
    ack_value = t;
    check_mpi(MPI_Isend(&ack_value, 1, MPI_DOUBLE, src_root, kAckTag, comm, &ack_req), "MPI_Isend");
  }
  dst_timers.sync_s += MPI_Wtime() - k0;
  received_time = t;
  have_received = true;
  std::fill(delivered.begin(), delivered.end(), 0);
  dst_timers.wait_s += t1 - t0;
  dst_timers.remap_s += t2 - t1;
  dst_timers.exchanges += 1;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ":") + n;
  return s;
}

// CHECKIN/CHECKOUT: global minimum, maximum and sum of each value field, to the log.
void Coupling::check(const char* what, std::span<const double> v, i64 n, MPI_Comm side, double t) {
  const std::size_t nv = static_cast<std::size_t>(nvalues);
  std::vector<double> mn(nv, std::numeric_limits<double>::infinity()), mx(nv, -std::numeric_limits<double>::infinity()),
      sm(nv, 0.0);
  for (std::size_t f = 0; f < nv; ++f)
    for (i64 i = 0; i < n; ++i) {
      const double x = v[f * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)];
      mn[f] = std::min(mn[f], x);
      mx[f] = std::max(mx[f], x);
      sm[f] += x;
    }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, mn.data(), static_cast<int>(nv), MPI_DOUBLE, MPI_MIN, side), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, mx.data(), static_cast<int>(nv), MPI_DOUBLE, MPI_MAX, side), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, sm.data(), static_cast<int>(nv), MPI_DOUBLE, MPI_SUM, side), "MPI_Allreduce");
  int r = 0;
  MPI_Comm_rank(side, &r);
  if (r != 0 || log_path.empty()) return;
  if (std::FILE* f = std::fopen(log_path.c_str(), "a")) {
    for (std::size_t k = 0; k < nv; ++k)
      std::fprintf(f, "%s %s t=%s value %zu: min %.17g max %.17g sum %.17g\n", what, label.c_str(), time_str(t).c_str(),
                   k, mn[k], mx[k], sm[k]);
    std::fclose(f);
  }
}

std::vector<std::string> value_names(const std::vector<std::string>& fields, const std::vector<int>& bundle) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < fields.size(); ++k)
    for (int b = 0; b < bundle[k]; ++b) out.push_back(bundle[k] == 1 ? fields[k] : fields[k] + "_" + std::to_string(b + 1));
  return out;
}

// OUTPUT/EXPOUT: the side's ranks append their points of the record to <field>_<component>.nc
// through the I/O layer (couple_io.hpp): no rank gathers the field.
void Coupling::write_output(bool source, double t, const std::vector<double>& values) {
  std::unique_ptr<RecordWriter>& file = source ? src_file : dst_file;
  try {
    if (!file) {
      const std::vector<std::string>& names = source ? cfg->src_fields : cfg->dst_fields;
      const std::string comp = source ? src_comp : dst_comp;
      // OUTPUT may name its file (YAML `file`); otherwise, as for EXPOUT, <fields>_<component>.nc.
      const std::string name = cfg->status == FieldStatus::output && !cfg->input_file.empty()
                                   ? cfg->input_file
                                   : join(names) + "_" + comp + ".nc";
      const std::string path = (directory.empty() || name.starts_with("/") ? "" : directory + "/") + name;
      file = std::make_unique<RecordWriter>(
          path, value_names(names, bundle), source ? src_decomp : dst_decomp, source ? src_dims : dst_dims,
          RecordFile{setup->start_date, setup->calendar, directory, source ? cfg->src_grid.name : cfg->dst_grid.name},
          source ? src_comm : dst_comm);
    }
    file->append(t, values);
  } catch (const Error& e) {  // the I/O layer's errors are agreed over the side: every rank is here
    throw Error(e.fault(), e.where() + ", component " + (source ? src_comp : dst_comp) + ", " + label, e.fix());
  }
}

// INPUT: the target side's ranks read their points of the record of time t (couple_io.hpp).
void Coupling::read_input(double t) {
  rbuf.resize(static_cast<std::size_t>(nvalues * n_dst));
  try {
    const std::string path = (directory.empty() || cfg->input_file.starts_with("/") ? "" : directory + "/") + cfg->input_file;
    read_records(path, value_names(cfg->dst_fields, bundle), t, dst_decomp, rbuf, dst_comm);
  } catch (const Error& e) {  // agreed by the I/O layer over the target side
    throw Error(e.fault(), e.where() + ", component " + dst_comp + ", " + label, e.fix());
  }
  received_time = t;
  have_received = true;
  std::fill(delivered.begin(), delivered.end(), 0);
}

void Coupling::send_initial(const std::vector<double>& record) {
  pending = record;
  pending.resize(static_cast<std::size_t>(nvalues * n_src), 0.0);
  action_time = 0;
  action_mode = 0;  // a restart record holds values only
  act(0, pending.data());
}

void Coupling::finish_all() {
  if (is_src) complete_previous(true);
  if (ack_req != MPI_REQUEST_NULL) check_mpi(MPI_Wait(&ack_req, MPI_STATUS_IGNORE), "MPI_Wait");
  for (std::unique_ptr<RecordWriter>* f : {&src_file, &dst_file})
    if (*f) (*f)->close();
}

}  // namespace estuary::detail
