// The coupler's timeline: recording (timeline.hpp) and the file written at terminate.
//
// The file, timeline_<component>.jsonl, is JSON lines: every line one JSON value, so that any
// language reads it line by line with its JSON parser (Python's json, jq, pandas), a run cut
// short still leaves a readable prefix of each rank's block, and grep finds a field's events.
//   line 1:  the header, an object: format, version, component, ranks, runtime, start_unix,
//            columns (the names of an event's entries), couplings (the component's, by their
//            index in the configuration: label, source and target components and fields,
//            period, lag, status, and this component's role "put", "get" or "put+get")
//   then, per rank of the component in rank order: an object {"rank", "world_rank", "host",
//            "events", "dropped", "end"} and that rank's events, one array each, in the order
//            they happened: [rank, kind, coupling, field, time, enter, leave, wait, remap,
//            transfer, io, info].
// Events are arrays, not objects, to keep the file small (the header names the columns): a
// day of hourly coupling of ten fields is some 500 events a rank, 50 kB.
//
// Written with MPI-IO rather than gathered to the component's root: every rank formats its
// own lines and writes them at its offset (an exclusive prefix sum of the sizes) in one
// collective call, so no rank ever holds more than its own events (a long run on thousands of
// ranks would not fit on one), and one file per component replaces LUCIA's file per process.
#include "couple/timeline.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "common/mpi_util.hpp"
#include "couple/coupling.hpp"
#include "estuary/error.hpp"
#include "estuary/settings.hpp"

namespace estuary::detail {

namespace {

// Events of the first block at least and of any block at most (64 bytes each: 256 kB to 4 MiB).
// A new block costs its zeroing (memset speed, ~0.5 ms for 4 MiB here, more when the kernel is
// slow to fault pages in): spread over its events, a few ns each, but paid at one call.
constexpr std::size_t kMinBlock = 4096;
constexpr std::size_t kMaxBlock = std::size_t{1} << 16;
// Events a rank keeps unless ESTUARY_TIMELINE_MAX_EVENTS says otherwise (256 MiB); later ones
// are counted as dropped (the file says how many), as LUCIA stops at its limit.
constexpr std::size_t kDefaultMaxEvents = std::size_t{1} << 22;

void put_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

// Shortest text that reads back as the same double (model times, periods).
void put_exact(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Wall-clock seconds to the nanosecond, trailing zeros dropped ("0.0012", "0").
void put_ns(std::string& out, double v) {
  char buf[48];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 9);
  char* e = r.ptr;
  while (e > buf && e[-1] == '0') --e;
  if (e > buf && e[-1] == '.') --e;
  if (e == buf || std::string_view(buf, static_cast<std::size_t>(e - buf)) == "-0") {  // (a tiny negative)
    out += '0';
    return;
  }
  out.append(buf, e);
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    put_json_string(s, v[i]);
  }
  return s + "]";
}

}  // namespace

const char* name_of(TimelineKind k) {
  switch (k) {
    case TimelineKind::put: return "put";
    case TimelineKind::get: return "get";
    case TimelineKind::enddef: return "enddef";
    case TimelineKind::terminate: return "terminate";
    case TimelineKind::restart: return "restart";
  }
  return "?";
}

bool timeline_wanted(bool configured) { return Settings::get().timeline_on(configured); }

Timeline::Timeline(const std::string& component, const CouplingSetup& setup,
                   const std::vector<std::unique_ptr<Coupling>>& couplings, MPI_Comm comm)
    : component_(component), comm_(comm), runtime_(setup.runtime) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &ranks_);
  char host[MPI_MAX_PROCESSOR_NAME + 1] = {};
  int len = 0;
  if (MPI_Get_processor_name(host, &len) == MPI_SUCCESS) host_.assign(host, static_cast<std::size_t>(std::max(0, len)));

  max_events_ = Settings::get().timeline_max_events_or(kDefaultMaxEvents);

  // The component's couplings, for the file; and the gets and puts this rank will make at
  // coupling times, for the first block (a model that calls them every step makes more: the
  // next blocks take those).
  std::size_t expected = 8;
  for (const auto& cp : couplings) {
    const Coupling& c = *cp;
    const bool puts = c.src_comp == component, gets = c.dst_comp == component;
    if (!puts && !gets) continue;
    const CouplingConfig& cfg = *c.cfg;
    const long index = static_cast<long>(c.cfg - setup.couplings.data());
    std::string j = couplings_json_.empty() ? "" : ",";
    j += "{\"id\":";
    j += std::to_string(index);
    j += ",\"label\":";
    put_json_string(j, c.label);
    j += ",\"origin\":";
    put_json_string(j, cfg.origin);
    j += ",\"source\":";
    put_json_string(j, c.src_comp);
    j += ",\"target\":";
    put_json_string(j, c.dst_comp);
    j += ",\"source_fields\":" + json_strings(cfg.src_fields) + ",\"target_fields\":" + json_strings(cfg.dst_fields);
    j += ",\"period\":";
    put_exact(j, cfg.period);
    j += ",\"lag\":";
    put_exact(j, cfg.lag);
    j += ",\"status\":";
    put_json_string(j, name_of(cfg.status));
    j += ",\"role\":";
    put_json_string(j, puts && gets ? "put+get" : puts ? "put" : "get");
    j += "}";
    couplings_json_ += j;
    const double times = cfg.period > 0 ? setup.runtime / cfg.period + 2 : 2;
    const std::size_t sides = (c.is_src ? 1u : 0u) + (c.is_dst ? 1u : 0u);
    expected += static_cast<std::size_t>(std::min(times, 1e7)) * cfg.src_fields.size() * sides;
  }
  // Models often call get and put every step, not only at coupling times: room for 4 calls per
  // coupling time before the run needs a second block.
  next_block_ = std::clamp(4 * expected, kMinBlock, kMaxBlock);
  grow();  // the first block now, zeroed, so that its pages are not faulted in during the run
}

void Timeline::start(MPI_Comm world, double enddef_enter) {
  MPI_Comm_rank(world, &world_rank_);
  // The common start: the end of a barrier over the whole coupled run.
  check_mpi(MPI_Barrier(world), "MPI_Barrier");
  origin_ = MPI_Wtime();
  start_unix_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  record(TimelineKind::enddef, -1, 0, 0.0, enddef_enter, origin_, SideClock{}, Info::ok);
}

bool Timeline::grow() {
  if (capacity_ >= max_events_) return false;
  const std::size_t n = std::min({next_block_, max_events_ - capacity_, kMaxBlock});
  // Value-initialised (zeroed): the pages are touched here, at growth, not at each event.
  blocks_.push_back(std::make_unique<TimelineEvent[]>(n));
  block_size_.push_back(n);
  fill_ = blocks_.back().get();
  end_ = fill_ + n;
  capacity_ += n;
  next_block_ = std::min(2 * n, kMaxBlock);
  return true;
}

std::size_t Timeline::events() const {
  return blocks_.empty() ? 0 : capacity_ - static_cast<std::size_t>(end_ - fill_);
}

std::string Timeline::path(const std::string& directory) const {
  const std::string file = "timeline_" + component_ + ".jsonl";
  return directory.empty() ? file : directory + "/" + file;
}

std::string Timeline::header() const {
  std::string h = "{\"format\":\"estuary-timeline\",\"version\":1,\"component\":";
  put_json_string(h, component_);
  h += ",\"ranks\":";
  h += std::to_string(ranks_);
  h += ",\"runtime\":";
  put_exact(h, runtime_);
  h += ",\"start_unix\":";
  put_ns(h, start_unix_);
  h += ",\"clock\":\"seconds from the common start (a barrier over every component at the end of enddef)\"";
  h += ",\"columns\":[\"rank\",\"kind\",\"coupling\",\"field\",\"time\",\"enter\",\"leave\",\"wait\",\"remap\","
       "\"transfer\",\"io\",\"info\"]";
  h += ",\"info_names\":{";
  bool first = true;
  for (int i = 0; i <= 13; ++i) {
    const char* n = name_of(static_cast<Info>(i));
    if (std::strcmp(n, "?") == 0) continue;  // (no codes 1 and 2)
    h += first ? "" : ",";
    first = false;
    h += '"';
    h += std::to_string(i);
    h += "\":";
    put_json_string(h, n);
  }
  h += "},\"couplings\":[" + couplings_json_ + "]}\n";
  return h;
}

std::string Timeline::lines() const {
  const double end = MPI_Wtime() - origin_;
  std::string out;
  out.reserve(96 * (events() + 1));
  // (Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.)
  out += "{\"rank\":";
  out += std::to_string(rank_);
  out += ",\"world_rank\":";
  out += std::to_string(world_rank_);
  out += ",\"host\":";
  put_json_string(out, host_);
  out += ",\"events\":";
  out += std::to_string(events());
  out += ",\"dropped\":";
  out += std::to_string(dropped_);
  out += ",\"end\":";
  put_ns(out, end);
  out += "}\n";
  std::string r = "[";
  r += std::to_string(rank_);
  r += ",\"";
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    const TimelineEvent* e = blocks_[b].get();
    const TimelineEvent* stop = b + 1 == blocks_.size() ? fill_ : e + block_size_[b];
    for (; e != stop; ++e) {
      out += r;
      out += name_of(e->kind);
      out += "\",";
      out += std::to_string(e->coupling);
      out += ',';
      out += std::to_string(e->field);
      out += ',';
      put_exact(out, e->time);
      for (double v : {e->enter, e->leave, e->wait, e->remap, e->transfer, e->io}) {
        out += ',';
        put_ns(out, v);
      }
      out += ',';
      out += std::to_string(static_cast<int>(e->info));
      out += "]\n";
    }
  }
  return out;
}

std::string Timeline::write(const std::string& directory) {
  const std::string text = (rank_ == 0 ? header() : std::string()) + lines();
  const std::string final_path = path(directory), tmp = final_path + ".tmp";
  long long size = static_cast<long long>(text.size()), offset = 0;
  MPI_Exscan(&size, &offset, 1, MPI_LONG_LONG, MPI_SUM, comm_);
  if (rank_ == 0) offset = 0;  // MPI_Exscan leaves rank 0's result undefined
  // The same outcome on every rank: the worst return code of each collective step.
  const auto failed = [&](int rc, const char* what, std::string& fault) {
    int bad = rc == MPI_SUCCESS ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
    if (bad && fault.empty()) {
      char msg[MPI_MAX_ERROR_STRING + 1] = {};
      int len = 0;
      if (rc != MPI_SUCCESS) MPI_Error_string(rc, msg, &len);
      fault = std::string(what) + " failed on " + tmp + (len > 0 ? ": " + std::string(msg, static_cast<std::size_t>(len)) : "");
    }
    return bad != 0;
  };
  std::string fault;
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(comm_, tmp.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  if (failed(rc, "MPI_File_open", fault)) {
    if (rc == MPI_SUCCESS) MPI_File_close(&fh);
    return fault;
  }
  rc = MPI_File_set_size(fh, 0);  // an older file of that name would leave its tail
  if (!failed(rc, "MPI_File_set_size", fault)) {
    // Counts are ints: pieces of at most 1 GiB, as many collective calls on every rank.
    constexpr long long kPiece = 1LL << 30;
    long long calls = (size + kPiece - 1) / kPiece;
    MPI_Allreduce(MPI_IN_PLACE, &calls, 1, MPI_LONG_LONG, MPI_MAX, comm_);
    int worst = MPI_SUCCESS;
    for (long long i = 0; i < calls; ++i) {
      const long long at = std::min(i * kPiece, size), n = std::min(kPiece, size - at);
      const int w = MPI_File_write_at_all(fh, static_cast<MPI_Offset>(offset + at), text.data() + at, static_cast<int>(n),
                                          MPI_CHAR, MPI_STATUS_IGNORE);
      if (w != MPI_SUCCESS) worst = w;
    }
    failed(worst, "MPI_File_write_at_all", fault);
  }
  failed(MPI_File_close(&fh), "MPI_File_close", fault);
  if (!fault.empty()) return fault;
  // Renamed once complete: a run stopped while writing leaves no half file under the name.
  int bad = 0;
  if (rank_ == 0) {
    std::error_code ec;
    std::filesystem::rename(tmp, final_path, ec);
    if (ec) {
      fault = "renaming " + tmp + " to " + final_path + ": " + ec.message();
      bad = 1;
    }
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, comm_);
  if (bad && rank_ != 0) fault = "renaming " + tmp + " to " + final_path + " failed (see the component's root)";
  return fault;
}

}  // namespace estuary::detail
