// The MPI executor: persistent requests and pack buffers made once, then start/finish.
#include "estuary/exchange.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/mpi_util.hpp"
#include "common/shared_comm.hpp"
#include "estuary/error.hpp"
#include "estuary/settings.hpp"

namespace estuary {
namespace {

using detail::check_mpi;
using i64 = std::int64_t;

// How long finish() waits for a stage before reporting the missing peers: long enough for any
// real exchange on a loaded machine, short enough that a broken run ends in minutes.
constexpr double kDefaultTimeoutS = 600;

// The average contiguous run (bytes) from which a one-field message moves as a derived datatype:
// Open MPI 4.1's datatype engine loses to packing on short runs (block -> cyclic, runs of one
// element: 1.7-3x slower) and wins on block rows (1.6-2.3x faster at 800-1600 doubles).
constexpr std::size_t kDefaultTypedMinRun = 1024;

// Copies `n` elements of `es` bytes from in[0], in[si], ... to out[0], out[so], ...
// (strides in elements). Contiguous runs take memcpy; the rest a typed loop the compiler can
// vectorise, for the two element widths estuary moves.
template <class W>
void copy_strided(std::byte* out, i64 so, const std::byte* in, i64 si, i64 n) {
  W* o = reinterpret_cast<W*>(out);
  const W* p = reinterpret_cast<const W*>(in);
  if (so == 1 && si == 1) {
    std::memcpy(o, p, static_cast<std::size_t>(n) * sizeof(W));
  } else if (so == 1) {
    for (i64 k = 0; k < n; ++k) o[k] = p[k * si];
  } else if (si == 1) {
    for (i64 k = 0; k < n; ++k) o[k * so] = p[k];
  } else {
    for (i64 k = 0; k < n; ++k) o[k * so] = p[k * si];
  }
}

void copy_elements(std::size_t es, std::byte* out, i64 so, const std::byte* in, i64 si, i64 n) {
  if (es == 8) copy_strided<std::uint64_t>(out, so, in, si, n);
  else copy_strided<std::uint32_t>(out, so, in, si, n);
}

// One output of an interleaved pass: elements rel, rel + s, rel + 2s, ... of the input (s the
// pass's stride) go to out[0], out[os], out[2 os], ...
struct Strand {
  std::byte* out = nullptr;
  i64 out_stride = 1, rel = 0, count = 0;
};

// Several strided reads of one input that interleave (block -> cyclic: each peer takes every
// p-th element) in one pass over it, tile by tile: each tile of the input is read from memory
// once and then from L1 by every strand, where separate gathers would each stream the whole
// input (p times the memory traffic).
template <class W>
void interleaved(const std::byte* in, i64 s, const std::vector<Strand>& strands, i64 longest) {
  constexpr i64 kTile = 256;  // elements per strand per tile: 256 * s * 8 bytes of input
  const W* p = reinterpret_cast<const W*>(in);
  for (i64 k0 = 0; k0 < longest; k0 += kTile)
    for (const Strand& st : strands) {
      const i64 k1 = std::min(k0 + kTile, st.count);
      const W* q = p + st.rel;
      W* o = reinterpret_cast<W*>(st.out);
      if (st.out_stride == 1)
        for (i64 k = k0; k < k1; ++k) o[k] = q[k * s];
      else
        for (i64 k = k0; k < k1; ++k) o[k * st.out_stride] = q[k * s];
    }
}

template <class T>
void fill_typed(std::byte* base, const Block& b, double v) {
  T* p = reinterpret_cast<T*>(base) + b.offset;
  for (i64 k = 0; k < b.count; ++k) p[k * b.stride] = static_cast<T>(v);
}

}  // namespace

const char* name_of(Type t) {
  switch (t) {
    case Type::f64: return "double";
    case Type::f32: return "float";
    case Type::i32: return "int32";
    case Type::i64: return "int64";
  }
  return "?";
}

struct Exchange::Impl {
  std::shared_ptr<const Schedule> shared;
  const Schedule& schedule;
  explicit Impl(std::shared_ptr<const Schedule> s) : shared(std::move(s)), schedule(*shared) {}
  std::vector<Type> types;
  std::vector<std::size_t> es;       // bytes per element, per field
  std::shared_ptr<detail::SharedComm> shared_comm;  // kept alive while requests use it
  MPI_Comm comm = MPI_COMM_NULL;
  int first_tag = 0;  // this executor's block on the shared communicator
  int rank = 0;

  struct StageBuffers {
    std::vector<std::byte> send, recv;
    std::vector<std::size_t> send_at, recv_at;  // byte offset of each message, then the total
    std::vector<MPI_Request> requests;          // receives first, then sends
    // The persistent requests (same layout; MPI_REQUEST_NULL where a message has none), copied
    // into `requests` at each start so that a run may post some messages afresh instead.
    std::vector<MPI_Request> persistent;
    // Derived-datatype messages (one field; see typed_message()): the message's blocks as one
    // MPI datatype relative to the user's array, MPI_DATATYPE_NULL for a packed message. A
    // typed receive is posted on the destination array at every start; a typed send goes
    // straight from the source only in run(), where nothing can write the source before
    // finish() (after start() callers may reuse it: those sends pack).
    std::vector<MPI_Datatype> send_type, recv_type;
    // Zero-copy receives (one field only): the element offset of the message's one contiguous
    // piece of the destination array, or -1 for a message that goes through the receive
    // buffer. Such a receive has no persistent request: it is posted on the user's array at
    // every start, whose address changes from run to run. Sends always pack, at start(): callers
    // reuse the source as soon as start() returns (the I/O server's model ranks do), so a send
    // straight from it could carry values written after start().
    std::vector<i64> recv_direct;
    // Interleaved packing (see interleaved()): every packed send and every local copy of the
    // stage is one strided block of the source at one common stride, their first elements
    // within one stride of each other: one pass packs them all and does the copies. 0: off.
    i64 weave_stride = 0, weave_base = 0;
  };
  // The stage's packed sends and copies as strands of one interleaved pass, or 0 when they are
  // not (any send of several blocks, another buffer, another stride, two strands on one lane).
  static i64 weave_of(const Stage& stage, i64& base) {
    i64 stride = 0, lo = 0, hi = 0;
    int strands = 0;
    auto take = [&](const Block& b) {
      if (b.buffer != Buffer::src || b.count < 2 || b.stride < 2) return false;
      if (strands == 0) { stride = b.stride; lo = hi = b.offset; }
      if (b.stride != stride) return false;
      lo = std::min(lo, b.offset);
      hi = std::max(hi, b.offset);
      ++strands;
      return hi - lo < stride;
    };
    for (std::size_t i = 0; i < stage.sends.size(); ++i) {
      if (stage.sends[i].blocks.size() != 1 || !take(stage.sends[i].blocks[0])) return 0;
    }
    for (const Copy& c : stage.copies)
      if (!take(c.from)) return 0;
    if (strands < 2) return 0;
    // Distinct lanes: offsets apart by less than the stride and pairwise different.
    std::vector<i64> lanes;
    for (const Message& m : stage.sends) lanes.push_back(m.blocks[0].offset);
    for (const Copy& c : stage.copies) lanes.push_back(c.from.offset);
    std::sort(lanes.begin(), lanes.end());
    if (std::adjacent_find(lanes.begin(), lanes.end()) != lanes.end()) return 0;
    base = lo;
    return stride;
  }
  // Packs every packed send of stage k and does its copies in one interleaved pass per field.
  void weave(std::size_t k) {
    const Stage& stage = schedule.stages[k];
    StageBuffers& sb = stages[k];
    std::vector<Strand> strands;
    for (std::size_t f = 0; f < es.size(); ++f) {
      strands.clear();
      i64 longest = 0;
      for (std::size_t i = 0; i < stage.sends.size(); ++i) {
        const Block& b = stage.sends[i].blocks[0];
        strands.push_back({sb.send.data() + sb.send_at[i] + padded_before(stage.sends[i], f), 1,
                           b.offset - sb.weave_base, b.count});
        longest = std::max(longest, b.count);
      }
      for (const Copy& c : stage.copies) {
        strands.push_back({write_base(c.to.buffer, f) + c.to.offset * es[f], c.to.stride,
                           c.from.offset - sb.weave_base, c.from.count});
        longest = std::max(longest, c.from.count);
      }
      const std::byte* in = src[f] + sb.weave_base * es[f];
      if (es[f] == 8) interleaved<std::uint64_t>(in, sb.weave_stride, strands, longest);
      else interleaved<std::uint32_t>(in, sb.weave_stride, strands, longest);
    }
    ++timers.interleaved_packs;
  }
  // Where field f starts inside a packed message.
  std::size_t padded_before(const Message& m, std::size_t f) const {
    std::size_t at = 0;
    for (std::size_t g = 0; g < f; ++g) at += padded(static_cast<std::size_t>(m.count()) * es[g]);
    return at;
  }
  std::vector<StageBuffers> stages;
  std::vector<std::byte> tmp;
  bool materialized = false;  // buffers and requests made (at the first start)
  void materialize();

  // Base addresses of the current run's buffers, per field.
  std::vector<const std::byte*> src;
  std::vector<std::byte*> dst, tmp_base;
  bool in_flight = false;
  bool source_held = false;  // this run is run(): the source cannot change before finish()
  std::size_t typed_min_run = 0;  // ESTUARY_DATATYPE_MIN_RUN, 0 when off
  bool broken = false;     // a time-out left requests pending: the exchange cannot be reused
  double timeout_s = 0;    // see wait_stage()
  bool disable_zero_copy = false;  // ESTUARY_ZERO_COPY=0
  bool disable_interleave = false;  // ESTUARY_ZERO_COPY=0 too: the plain pack path throughout
  ExchangeTimers timers;

  const std::byte* read_base(Buffer b, std::size_t f) const {
    return b == Buffer::src ? src[f] : b == Buffer::dst ? dst[f] : tmp_base[f];
  }
  std::byte* write_base(Buffer b, std::size_t f) const {
    return b == Buffer::dst ? dst[f] : tmp_base[f];
  }

  // A message holds each field in turn, each field's section padded to 8 bytes so that every
  // element stays aligned to its own size whatever mix of types travels together.
  static std::size_t padded(std::size_t bytes) { return (bytes + 7) & ~std::size_t{7}; }
  std::size_t message_bytes(const Message& m) const {
    std::size_t n = 0;
    for (std::size_t e : es) n += padded(static_cast<std::size_t>(m.count()) * e);
    return n;
  }
  // What travels: the message without the last field's padding, so that a one-field message is
  // exactly its elements and a zero-copy receive into the user's array holds all of it.
  std::size_t wire_bytes(const Message& m) const {
    if (es.empty()) return 0;
    const std::size_t last = static_cast<std::size_t>(m.count()) * es.back();
    return message_bytes(m) - padded(last) + last;
  }
  // The element offset of a message whose blocks are one contiguous piece of `buffer`, else -1.
  static i64 contiguous_in(const Message& m, Buffer buffer) {
    if (m.blocks.empty()) return -1;
    i64 next = m.blocks.front().offset;
    for (const Block& b : m.blocks) {
      if (b.buffer != buffer || b.offset != next || (b.count > 1 && b.stride != 1)) return -1;
      next += b.count;
    }
    return m.blocks.front().offset;
  }
  // The message as an MPI datatype of bytes relative to `buffer`'s start, when every block
  // lies in `buffer` and its contiguous runs average at least `min_run` bytes; else
  // MPI_DATATYPE_NULL. Long runs are where Open MPI's pipelined datatype engine wins: it
  // copies the runs through fragments that stay in cache, where packing writes a whole
  // message buffer to memory and reads it back (docs/performance.md, "2-D block transposes").
  static MPI_Datatype typed_message(const Message& m, Buffer buffer, std::size_t es, std::size_t min_run) {
    if (min_run == 0 || m.blocks.empty()) return MPI_DATATYPE_NULL;
    std::vector<MPI_Aint> at;
    std::vector<int> len;
    for (const Block& b : m.blocks) {
      if (b.buffer != buffer) return MPI_DATATYPE_NULL;
      const bool run = b.count == 1 || b.stride == 1;
      for (i64 k = 0; k < (run ? 1 : b.count); ++k) {
        const MPI_Aint start = static_cast<MPI_Aint>((b.offset + k * b.stride) * static_cast<i64>(es));
        const int bytes = static_cast<int>((run ? b.count : 1) * static_cast<i64>(es));
        if (!at.empty() && at.back() + len.back() == start) len.back() += bytes;  // adjacent: one run
        else {
          at.push_back(start);
          len.push_back(bytes);
        }
        // The average only falls with each new run: give up as soon as it is below min_run.
        if (static_cast<std::size_t>(m.count()) * es / at.size() < min_run) return MPI_DATATYPE_NULL;
      }
    }
    MPI_Datatype t = MPI_DATATYPE_NULL;
    check_mpi(MPI_Type_create_hindexed(static_cast<int>(at.size()), len.data(), at.data(), MPI_BYTE, &t),
              "MPI_Type_create_hindexed");
    check_mpi(MPI_Type_commit(&t), "MPI_Type_commit");
    return t;
  }
  void pack(const Message& m, std::byte* out) const {
    const std::size_t count = static_cast<std::size_t>(m.count());
    for (std::size_t f = 0; f < es.size(); ++f) {
      std::byte* o = out;
      for (const Block& b : m.blocks) {
        copy_elements(es[f], o, 1, read_base(b.buffer, f) + b.offset * es[f], b.stride, b.count);
        o += static_cast<std::size_t>(b.count) * es[f];
      }
      out += padded(count * es[f]);
    }
  }
  void unpack(const Message& m, const std::byte* in) const {
    const std::size_t count = static_cast<std::size_t>(m.count());
    for (std::size_t f = 0; f < es.size(); ++f) {
      const std::byte* i = in;
      for (const Block& b : m.blocks) {
        copy_elements(es[f], write_base(b.buffer, f) + b.offset * es[f], b.stride, i, 1, b.count);
        i += static_cast<std::size_t>(b.count) * es[f];
      }
      in += padded(count * es[f]);
    }
  }

  // Receives are posted first, so that a peer's send finds them and a large message moves while
  // this rank packs; each send starts as soon as it is packed (its peer can fetch it while this
  // rank packs the next).
  void start_stage(std::size_t k) {
    const Stage& stage = schedule.stages[k];
    StageBuffers& sb = stages[k];
    const int tag = first_tag + static_cast<int>(k % detail::kTagsPerObject);
    const std::size_t nr = stage.recvs.size();
    for (std::size_t i = 0; i < nr; ++i) {
      MPI_Request& r = sb.requests[i];
      if (sb.recv_type[i] != MPI_DATATYPE_NULL) {
        check_mpi(MPI_Irecv(dst[0], 1, sb.recv_type[i], stage.recvs[i].peer, tag, comm, &r), "MPI_Irecv");
        ++timers.typed_recvs;
        continue;
      }
      if (sb.recv_direct[i] < 0) {
        r = sb.persistent[i];
        check_mpi(MPI_Start(&r), "MPI_Start");
        continue;
      }
      check_mpi(MPI_Irecv(dst[0] + sb.recv_direct[i] * es[0], static_cast<int>(wire_bytes(stage.recvs[i])),
                          MPI_BYTE, stage.recvs[i].peer, tag, comm, &r),
                "MPI_Irecv");
      ++timers.zero_copy_recvs;
    }
    double pack_s = 0;
    if (sb.weave_stride > 0) {  // every packed send and copy in one pass, then the sends start
      const double t0 = MPI_Wtime();
      weave(k);
      pack_s += MPI_Wtime() - t0;
    }
    for (std::size_t i = 0; i < stage.sends.size(); ++i) {
      MPI_Request& r = sb.requests[nr + i];
      if (source_held && sb.send_type[i] != MPI_DATATYPE_NULL) {
        check_mpi(MPI_Isend(src[0], 1, sb.send_type[i], stage.sends[i].peer, tag, comm, &r), "MPI_Isend");
        ++timers.typed_sends;
        continue;
      }
      r = sb.persistent[nr + i];
      if (sb.weave_stride == 0) {
        const double t0 = MPI_Wtime();
        pack(stage.sends[i], sb.send.data() + sb.send_at[i]);
        pack_s += MPI_Wtime() - t0;
      }
      check_mpi(MPI_Start(&r), "MPI_Start");
    }
    timers.pack_s += pack_s;
    const double t1 = MPI_Wtime();
    // The local part moves while the messages fly (woven stages did it while packing).
    if (sb.weave_stride == 0)
      for (const Copy& c : stage.copies)
      for (std::size_t f = 0; f < es.size(); ++f)
        copy_elements(es[f], write_base(c.to.buffer, f) + c.to.offset * es[f], c.to.stride,
                      read_base(c.from.buffer, f) + c.from.offset * es[f], c.from.stride,
                      c.from.count);
    timers.copy_s += MPI_Wtime() - t1;
  }

  // Waits for stage k's messages, at most `timeout_s` seconds (0: forever). A peer that never
  // sends — it failed before starting, or called a different exchange — becomes an Error
  // naming the peers still missing instead of a hang.
  void wait_stage(std::size_t k) {
    StageBuffers& sb = stages[k];
    const int n = static_cast<int>(sb.requests.size());
    if (n == 0) return;
    // Spinning without a pause: a stage's messages are usually on their way already — unless
    // ranks outnumber the cores, where the spinning rank would hold the core its partner needs
    // (an I/O server's model ranks waiting for a buffer slot, say): then it pauses after a while.
    if (detail::wait_all_bounded(n, sb.requests.data(), timeout_s, detail::ranks_outnumber_cores())) return;
    const Stage& stage = schedule.stages[k];
    std::string from, to;
    for (int i = 0; i < n; ++i) {
      int done = 0;
      check_mpi(MPI_Test(&sb.requests[static_cast<std::size_t>(i)], &done, MPI_STATUS_IGNORE),
                "MPI_Test");
      if (done) continue;
      const std::size_t nr = stage.recvs.size();
      if (static_cast<std::size_t>(i) < nr)
        from += (from.empty() ? "" : ", ") + std::to_string(stage.recvs[static_cast<std::size_t>(i)].peer);
      else
        to += (to.empty() ? "" : ", ") + std::to_string(stage.sends[static_cast<std::size_t>(i) - nr].peer);
    }
    broken = true;
    throw Error("exchange stage " + std::to_string(k) + " did not complete within " +
                    std::to_string(timeout_s) + " s: nothing arrived from rank(s) " +
                    (from.empty() ? "-" : from) + "; not delivered to rank(s) " +
                    (to.empty() ? "-" : to),
                "rank " + std::to_string(rank),
                "check that those ranks run the same exchange without an error of their own "
                "(ESTUARY_TIMEOUT, or its old name ESTUARY_EXCHANGE_TIMEOUT, sets the limit in "
                "seconds, 0 waits forever)");
  }

  void finish_stage(std::size_t k) {
    const Stage& stage = schedule.stages[k];
    StageBuffers& sb = stages[k];
    double t0 = MPI_Wtime();
    wait_stage(k);
    double t1 = MPI_Wtime();
    for (std::size_t i = 0; i < stage.recvs.size(); ++i)
      if (sb.recv_direct[i] < 0 && sb.recv_type[i] == MPI_DATATYPE_NULL)
        unpack(stage.recvs[i], sb.recv.data() + sb.recv_at[i]);
    timers.wait_s += t1 - t0;
    timers.unpack_s += MPI_Wtime() - t1;
  }

  void fill() const {
    for (std::size_t f = 0; f < types.size(); ++f)
      for (const Block& b : schedule.fills) switch (types[f]) {
          case Type::f64: fill_typed<double>(dst[f], b, schedule.fill_value); break;
          case Type::f32: fill_typed<float>(dst[f], b, schedule.fill_value); break;
          case Type::i32: fill_typed<std::int32_t>(dst[f], b, schedule.fill_value); break;
          case Type::i64: fill_typed<std::int64_t>(dst[f], b, schedule.fill_value); break;
        }
  }
};

Exchange::Exchange(const Schedule& schedule, MPI_Comm comm, std::vector<Type> types)
    : Exchange(std::make_shared<const Schedule>(schedule), comm, std::move(types)) {}

Exchange::Exchange(std::shared_ptr<const Schedule> shared, MPI_Comm comm, std::vector<Type> types)
    : impl_(std::make_unique<Impl>(std::move(shared))) {
  Impl& x = *impl_;
  const Schedule& schedule = x.schedule;
  x.types = std::move(types);
  for (Type t : x.types) x.es.push_back(size_of(t));
  x.timeout_s = Settings::get().timeout_s(kDefaultTimeoutS);
  x.disable_zero_copy = !Settings::get().zero_copy;
  x.disable_interleave = x.disable_zero_copy;
  x.typed_min_run = x.disable_zero_copy ? 0 : Settings::get().datatype_min_run_or(kDefaultTypedMinRun);
  // A fill value an integer field cannot hold would be undefined behaviour when converted.
  // Checked whether or not this rank has elements to fill, so every rank throws alike (the
  // value and the types are the same on all ranks) before the collective set-up below.
  MPI_Comm_rank(comm, &x.rank);
  for (std::size_t f = 0; f < x.types.size(); ++f) {
      const double v = x.schedule.fill_value;
      const bool fits = x.types[f] == Type::i32 ? (v >= -2147483648.0 && v <= 2147483647.0)
                        : x.types[f] == Type::i64 ? (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
                                                  : true;
      if (!fits || (x.types[f] != Type::f64 && x.types[f] != Type::f32 && v != std::trunc(v)))
        throw Error("fill value " + std::to_string(v) + " does not fit a " + name_of(x.types[f]) +
                        " field",
                    "rank " + std::to_string(x.rank) + ", field " + std::to_string(f),
                    "choose a fill value the field's type can hold");
    }
  x.shared_comm = detail::shared_comm(comm);
  x.comm = x.shared_comm->comm;
  x.first_tag = detail::take_tags(*x.shared_comm);
  MPI_Comm_rank(x.comm, &x.rank);
  x.src.assign(x.types.size(), nullptr);
  x.dst.assign(x.types.size(), nullptr);
  x.tmp_base.assign(x.types.size(), nullptr);

  // The sizes are checked here, on every rank alike; the buffers and persistent requests are
  // made at the first start() (both are local), so an executor prepared for a field count that
  // never runs — the coupler prepares one for puts with a fractional mask — holds no buffers.
  auto bytes_of = [&](const Message& m) {
    const std::size_t n = x.message_bytes(m);
    if (n > static_cast<std::size_t>(INT_MAX))
      throw Error("a message of " + std::to_string(n) + " bytes to or from rank " +
                      std::to_string(m.peer) + " exceeds MPI's int count",
                  "rank " + std::to_string(x.rank), "move fewer fields in one exchange");
    return n;
  };
  x.stages.resize(schedule.stages.size());
  for (std::size_t k = 0; k < schedule.stages.size(); ++k) {
    const Stage& stage = schedule.stages[k];
    Impl::StageBuffers& sb = x.stages[k];
    // A zero-copy receive needs one field (a message of several holds them one after the other)
    // and a destination array that nothing in the same stage reads (a send packed after the
    // receive is posted, or a local copy, would see the new values). Staged schedules forward
    // through tmp: they keep the receive buffers.
    bool stage_reads_dst = false;
    for (const Message& m : stage.sends)
      for (const Block& b : m.blocks) stage_reads_dst |= b.buffer == Buffer::dst;
    for (const Copy& c : stage.copies) stage_reads_dst |= c.from.buffer == Buffer::dst;
    const bool direct = x.types.size() == 1 && !x.disable_zero_copy;
    if (!x.disable_interleave) sb.weave_stride = Impl::weave_of(stage, sb.weave_base);
    // Derived datatypes for one field, where no interleaved pass packs the stage's sends and,
    // for receives, under the zero-copy conditions (a contiguous one keeps its plain receive).
    // A receive that goes straight into the destination takes no receive buffer space.
    const std::size_t min_run = direct && sb.weave_stride == 0 ? x.typed_min_run : 0;
    std::size_t ns = 0, nr = 0;
    for (const Message& m : stage.sends) {
      sb.send_at.push_back(ns);
      ns += bytes_of(m);
      sb.send_type.push_back(min_run ? Impl::typed_message(m, Buffer::src, x.es[0], min_run) : MPI_DATATYPE_NULL);
    }
    for (const Message& m : stage.recvs) {
      const i64 at = direct && !stage_reads_dst ? Impl::contiguous_in(m, Buffer::dst) : -1;
      const bool typed = min_run && !stage_reads_dst && at < 0;
      sb.recv_direct.push_back(at);
      sb.recv_type.push_back(typed ? Impl::typed_message(m, Buffer::dst, x.es[0], min_run) : MPI_DATATYPE_NULL);
      sb.recv_at.push_back(nr);
      const std::size_t bytes = bytes_of(m);
      if (at < 0 && sb.recv_type.back() == MPI_DATATYPE_NULL) nr += bytes;
    }
    sb.send_at.push_back(ns);  // one past the last: the buffer's size
    sb.recv_at.push_back(nr);
  }
}

void Exchange::Impl::materialize() {
  std::size_t tmp_bytes = 0;
  for (std::size_t e : es) tmp_bytes += padded(static_cast<std::size_t>(schedule.tmp_size) * e);
  tmp.resize(tmp_bytes);
  std::size_t at = 0;
  for (std::size_t f = 0; f < types.size(); ++f) {
    tmp_base[f] = tmp.data() + at;
    at += padded(static_cast<std::size_t>(schedule.tmp_size) * es[f]);
  }
  for (std::size_t k = 0; k < schedule.stages.size(); ++k) {
    const Stage& stage = schedule.stages[k];
    StageBuffers& sb = stages[k];
    sb.send.resize(sb.send_at.back());
    sb.recv.resize(sb.recv_at.back());
    // Stages follow one another on both sides, so wrapping the stage number cannot mix them.
    const int tag = first_tag + static_cast<int>(k % detail::kTagsPerObject);
    for (std::size_t i = 0; i < stage.recvs.size(); ++i) {
      MPI_Request r = MPI_REQUEST_NULL;
      if (sb.recv_direct[i] < 0 && sb.recv_type[i] == MPI_DATATYPE_NULL)
        check_mpi(MPI_Recv_init(sb.recv.data() + sb.recv_at[i], static_cast<int>(wire_bytes(stage.recvs[i])),
                                MPI_BYTE, stage.recvs[i].peer, tag, comm, &r),
                  "MPI_Recv_init");
      sb.persistent.push_back(r);
    }
    for (std::size_t i = 0; i < stage.sends.size(); ++i) {
      MPI_Request r = MPI_REQUEST_NULL;
      check_mpi(MPI_Send_init(sb.send.data() + sb.send_at[i], static_cast<int>(wire_bytes(stage.sends[i])),
                              MPI_BYTE, stage.sends[i].peer, tag, comm, &r),
                "MPI_Send_init");
      sb.persistent.push_back(r);
    }
    sb.requests.assign(sb.persistent.size(), MPI_REQUEST_NULL);
  }
  materialized = true;
}

Exchange::~Exchange() {
  if (!impl_) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  if (impl_->in_flight) {
    try { finish(); } catch (...) {}
  }
  for (auto& sb : impl_->stages) {
    for (std::size_t j = 0; j < sb.requests.size(); ++j)  // one posted afresh, left by a time-out
      if (sb.requests[j] != MPI_REQUEST_NULL && sb.requests[j] != sb.persistent[j]) MPI_Request_free(&sb.requests[j]);
    for (auto& r : sb.persistent)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    for (auto* types : {&sb.send_type, &sb.recv_type})
      for (auto& t : *types)
        if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }
}

Exchange::Exchange(Exchange&&) noexcept = default;
Exchange& Exchange::operator=(Exchange&&) noexcept = default;

void Exchange::start(std::span<const Field> fields) { start(fields, false); }

void Exchange::run(std::span<const Field> fields) {
  start(fields, true);
  finish();
}

void Exchange::start(std::span<const Field> fields, bool source_held) {
  Impl& x = *impl_;
  const std::string here = "rank " + std::to_string(x.rank);
  if (x.broken)
    throw Error("this exchange timed out earlier and cannot be reused", here,
                "create a new Exchange (or Redist)");
  if (x.in_flight)
    throw Error("start() called while an exchange is in flight", here, "call finish() first");
  if (fields.size() != x.types.size())
    throw Error("an exchange set up for " + std::to_string(x.types.size()) + " field(s) got " +
                    std::to_string(fields.size()),
                here, "pass one field per type given at set-up, in the same order");
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const Field& fd = fields[f];
    const std::string where = here + ", field " + std::to_string(f);
    if (fd.type != x.types[f])
      throw Error(std::string("field type ") + name_of(fd.type) + " differs from the type " +
                      name_of(x.types[f]) + " given at set-up",
                  where);
    if (fd.src_count < x.schedule.src_size || (x.schedule.src_size > 0 && !fd.src))
      throw Error("source buffer holds " + std::to_string(fd.src_count) + " elements, the " +
                      "source decomposition has " + std::to_string(x.schedule.src_size),
                  where);
    if (fd.dst_count < x.schedule.dst_size || (x.schedule.dst_size > 0 && !fd.dst))
      throw Error("destination buffer holds " + std::to_string(fd.dst_count) + " elements, the " +
                      "destination decomposition has " + std::to_string(x.schedule.dst_size),
                  where);
    x.src[f] = static_cast<const std::byte*>(fd.src);
    x.dst[f] = static_cast<std::byte*>(fd.dst);
  }
  if (!x.materialized) x.materialize();
  x.fill();
  x.in_flight = true;
  x.source_held = source_held;
  if (!x.schedule.stages.empty()) x.start_stage(0);
}

void Exchange::finish() {
  Impl& x = *impl_;
  if (!x.in_flight)
    throw Error("finish() called with no exchange in flight", "rank " + std::to_string(x.rank),
                "call start() first");
  x.in_flight = false;
  for (std::size_t k = 0; k < x.schedule.stages.size(); ++k) {
    if (k > 0) x.start_stage(k);
    x.finish_stage(k);
  }
  ++x.timers.runs;
}

const Schedule& Exchange::schedule() const { return impl_->schedule; }
const std::vector<Type>& Exchange::types() const { return impl_->types; }
const ExchangeTimers& Exchange::timers() const { return impl_->timers; }

}  // namespace estuary
