// No hand tuning (issue 21): the writer count and the server mode's buffers, when the
// configuration leaves them out, from the ranks, the output volume and a write bandwidth —
// measured once per process and directory by a short timed write, or given
// (output.write_bandwidth, ESTUARY_IO_BANDWIDTH). choose_tuning (io.hpp) is the model, a pure
// function; the rest gathers its inputs, collectively, so that every rank decides alike.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "estuary/settings.hpp"
#include "io/output_impl.hpp"

namespace estuary::io {

namespace {

std::string mb(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g MB", bytes / 1e6);
  return b;
}
std::string mbs(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g MB/s", v);
  return b;
}

// D writers' aggregate bandwidth under the model of choose_tuning.
double aggregate(const TuneInput& in, double gain, int d) {
  return in.one_mb_s * (1 + (std::min(d, std::max(1, in.many)) - 1) * gain);
}

}  // namespace

Tuning choose_tuning(const TuneInput& in) {
  Tuning t;
  std::string why;
  auto add = [&why](const std::string& s) {
    if (!why.empty()) why.append("; ");
    why.append(s);
  };
  const bool server = in.mode == Mode::server;
  // ---- writers ----
  if (in.writers > 0) {
    t.writers = in.writers;
    add("writers " + std::to_string(in.writers) + " as configured");
  } else {
    t.writers_auto = true;
    // Server mode: a dedicated rank costs its core in full (CPMIP's Data Output Cost), so one
    // rank in 8 at most — unless the ranks outnumber the cores: then every core is shared by
    // turns anyway and a server costs the model no core of its own, so up to half the ranks may
    // serve (measured on 4 ranks over 2 cores: 2 servers 1.3x faster than 1; performance.md).
    const bool shared_cores = in.cores > 0 && in.ranks > in.cores;
    int cap = server ? std::max(1, std::min(in.ranks - 1, shared_cores ? in.ranks / 2 : in.ranks / 8))
                     : std::max(1, in.ranks);
    if (in.cores > 0) cap = std::min(cap, in.cores);
    const double gain = in.many > 1 && in.one_mb_s > 0
                            ? std::clamp((in.many_mb_s / in.one_mb_s - 1) / (in.many - 1), 0.0, 1.0)
                            : 0.0;
    int bw = 1;  // the fewest writers within 10 % of what `many` reach
    if (in.one_mb_s > 0)
      while (bw < in.many && aggregate(in, gain, bw) < 0.9 * aggregate(in, gain, in.many)) ++bw;
    const int vol = in.step_bytes < 0 ? cap
                                      : static_cast<int>(std::clamp(std::floor(in.step_bytes / kMinSlabBytes), 1.0, 1e6));
    t.writers = std::max(1, std::min({bw, vol, cap}));
    if (!in.parallel_files) t.writers = 1;
    std::string w = "writers " + std::to_string(t.writers) + " (auto: ";
    if (in.one_mb_s > 0) {
      char g[64];
      std::snprintf(g, sizeof g, "%.2f", gain);
      w += "one writer " + mbs(in.one_mb_s);
      if (in.many > 1) w += ", " + std::to_string(in.many) + " writers " + mbs(in.many_mb_s) + ", gain per added writer " + g;
      else w += ", no gain from added writers";
      w += " -> " + std::to_string(bw) + " for 90 %";
    } else {
      w += "bandwidth not measured -> 1";
    }
    if (in.step_bytes >= 0)
      w += "; an output step " + mb(in.step_bytes) + " -> at most " + std::to_string(vol) + " at " +
           mb(kMinSlabBytes) + " a writer";
    else
      w += "; the volume is not known before the fields";
    w += "; " + std::to_string(in.ranks) + " ranks " + (server ? "in server mode" : "serverless");
    if (in.cores > 0) w += " on " + std::to_string(in.cores) + " cores";
    if (server) w += shared_cores ? " (shared: up to half the ranks serve)" : " (up to one rank in 8 serves)";
    w += " -> at most " + std::to_string(cap);
    if (!in.parallel_files) w += "; a file needs one writer (no PnetCDF / parallel netCDF-4)";
    add(w + ")");
  }
  // ---- buffers (server mode) ----
  if (in.buffer_records > 0) {
    t.buffer_records = in.buffer_records;
    if (server) add("buffer_records " + std::to_string(in.buffer_records) + " as configured");
  } else if (!server) {
    t.buffer_records = 2;  // unused without servers
  } else if (!in.records_per_period.empty()) {
    t.buffers_auto = true;
    double most = 0, bytes = 0;
    for (std::size_t k = 0; k < in.records_per_period.size(); ++k) {
      most = std::max(most, in.records_per_period[k]);
      bytes += k < in.record_bytes.size() ? in.record_bytes[k] : 0;
    }
    const double fit = bytes > 0 ? std::floor(in.buffer_budget_bytes / bytes) : 1e6;
    t.buffer_records = static_cast<int>(std::clamp(std::min(std::ceil(most), fit), 2.0, 1024.0));
    add("buffer_records " + std::to_string(t.buffer_records) + " (auto: " + std::to_string(static_cast<long>(std::ceil(most))) +
        " records of a field in the longest output period, at least 2; " + mb(bytes) + " a record of every field, " +
        mb(in.buffer_budget_bytes) + " budget -> at most " + std::to_string(static_cast<long>(std::max(0.0, std::min(fit, 1e6)))) + ")");
  }
  t.reason = why;
  return t;
}

namespace detail {

// One writer's and several writers' bandwidth to `dir`: rank 0 writes kProbeBytes and syncs,
// then min(ranks, 4) ranks spread over the communicator (w * P / k, over nodes when ranks are
// placed by node) do so at once, each its slab of one shared file (as the writers share an
// output file: separate files scale better than the output does). Collective; every rank gets rank 0's numbers. Measured once
// per process and directory (the cache is used only when every rank has it).
struct Probe {
  double one = 0, many = 0;
  int k = 1;
};

namespace {

constexpr std::size_t kProbeBytes = 8u << 20;

// Seconds to write kProbeBytes to `path` at `offset` and fdatasync it (negative: failed). The
// file is shared by the writers of a probe, as the output files are (one file, disjoint slabs).
double timed_write(const std::string& path, std::size_t offset) {
  std::vector<char> block(1u << 20, 'e');
  const double t0 = MPI_Wtime();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) return -1;
  bool ok = true;
  for (std::size_t done = 0; ok && done < kProbeBytes; done += block.size())
    ok = ::pwrite(fd, block.data(), block.size(), static_cast<off_t>(offset + done)) == static_cast<ssize_t>(block.size());
  ok = ::fdatasync(fd) == 0 && ok;
  ::close(fd);
  return ok ? MPI_Wtime() - t0 : -1;
}

}  // namespace

Probe measure_bandwidth(const std::string& directory, MPI_Comm comm) {
  static std::map<std::string, Probe> cache;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::string dir = directory.empty() ? "." : directory;
  int have = cache.count(dir) ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm);
  Probe p;
  if (all) {
    p = cache[dir];
  } else {
    if (rank == 0) {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);  // the writers report a failure later
    }
    MPI_Barrier(comm);
    const std::string base = dir + "/.estuary_bandwidth_" + std::to_string(::getpid());
    double one = 0;
    if (rank == 0) {
      one = timed_write(base + "_one", 0);
      ::unlink((base + "_one").c_str());
    }
    p.k = std::min(size, 4);
    int mine = -1;  // this rank's slab of the shared probe file
    for (int w = 0; w < p.k; ++w)
      if (static_cast<std::int64_t>(w) * size / p.k == rank) mine = w;
    int pid0 = static_cast<int>(::getpid());  // rank 0's: one name for the shared file
    MPI_Bcast(&pid0, 1, MPI_INT, 0, comm);
    const std::string shared = dir + "/.estuary_bandwidth_shared_" + std::to_string(pid0);
    MPI_Barrier(comm);
    const double t = mine >= 0 ? timed_write(shared, static_cast<std::size_t>(mine) * kProbeBytes) : 0;
    MPI_Barrier(comm);
    if (rank == 0) ::unlink(shared.c_str());
    // A failed write anywhere (-1) makes the measurement unknown on every rank.
    const double mt[2] = {t, t < 0 ? 1.0 : 0.0};
    double red[2] = {0, 0};
    MPI_Allreduce(mt, red, 2, MPI_DOUBLE, MPI_MAX, comm);
    double v[3] = {one > 0 ? static_cast<double>(kProbeBytes) / 1e6 / one : 0,
                   red[1] == 0 && red[0] > 0 ? p.k * static_cast<double>(kProbeBytes) / 1e6 / red[0] : 0,
                   static_cast<double>(p.k)};
    MPI_Bcast(v, 3, MPI_DOUBLE, 0, comm);
    p.one = v[0];
    p.many = v[1] > 0 ? v[1] : v[0];
    if (v[1] <= 0) p.k = 1;
  }
  cache[dir] = p;
  double v[3] = {p.one, p.many, static_cast<double>(p.k)};  // rank 0's, should caches differ
  MPI_Bcast(v, 3, MPI_DOUBLE, 0, comm);
  return {v[0], v[1], static_cast<int>(v[2])};
}

}  // namespace detail

// The bandwidth the choice uses: output.write_bandwidth, ESTUARY_IO_BANDWIDTH, or measured.
// A given bandwidth is one writer's, and added writers are assumed to gain nothing on one node
// and in full on each further node (their own links to the file system).
void Output::Impl::bandwidth_into(TuneInput& in, MPI_Comm comm) const {
  double given = cfg.write_bandwidth;
  // Every rank fails alike on a bad variable, and follows rank 0's value.
  estuary::detail::agree(comm, [&] {
    const auto& e = Settings::get().io_bandwidth;
    if (given > 0 || !e) return;
    char* end = nullptr;
    given = std::strtod(e->c_str(), &end);
    if (end == e->c_str() || *end != '\0' || !(given > 0) || !std::isfinite(given))
      throw Error("ESTUARY_IO_BANDWIDTH=" + *e + " is not a bandwidth in MB/s", "environment",
                  "give one writer's bandwidth to the output directory in MB/s, or unset it to measure it");
  });
  MPI_Bcast(&given, 1, MPI_DOUBLE, 0, comm);
  if (given > 0) {
    MPI_Comm node = MPI_COMM_NULL;
    estuary::detail::check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                               "MPI_Comm_split_type");
    int nrank = 0, first = 0, nodes = 1;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_free(&node);
    first = nrank == 0 ? 1 : 0;
    MPI_Allreduce(&first, &nodes, 1, MPI_INT, MPI_SUM, comm);
    in.one_mb_s = given;
    in.many = nodes;
    in.many_mb_s = given * nodes;
    return;
  }
  const detail::Probe p = detail::measure_bandwidth(cfg.directory, comm);
  in.one_mb_s = p.one;
  in.many_mb_s = p.many;
  in.many = p.k;
}

namespace {

// False when no bandwidth could give more than one writer (a small volume, one rank, files one
// writer must write): then nothing is measured.
bool could_use_writers(const TuneInput& in) {
  TuneInput best = in;  // a file system on which every added writer adds its full bandwidth
  best.one_mb_s = 1;
  best.many = best.ranks;
  best.many_mb_s = best.ranks;
  return choose_tuning(best).writers > 1;
}

// The cores of the nodes comm's ranks run on (each node counted once). Collective.
int node_cores(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  estuary::detail::check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                             "MPI_Comm_split_type");
  int nrank = 0;
  MPI_Comm_rank(node, &nrank);
  MPI_Comm_free(&node);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  int mine = nrank == 0 ? static_cast<int>(std::max(1L, online)) : 0, all = 0;  // once per node
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, comm);
  return all;
}

}  // namespace

void Output::Impl::tune_writers_at_start(int size) {
  TuneInput in;
  in.mode = cfg.mode;
  in.ranks = size;
  in.cores = node_cores(xcomm);
  in.parallel_files = parallel_files();
  if (could_use_writers(in)) bandwidth_into(in, xcomm);
  tuning = choose_tuning(in);
}

bool Output::Impl::parallel_files() const {
  for (const FileConfig& f : cfg.files)
    if (f.format == Format::netcdf4 ? !have_netcdf4_parallel() || Settings::get().nc4_in_turn : !have_pnetcdf())
      return false;
  return true;
}

void Output::Impl::tune_at_end_def() {
  TuneInput in;
  in.mode = cfg.mode;
  in.ranks = xsize;
  in.cores = node_cores(xcomm);
  in.writers = server_mode || cfg.writers > 0 ? nwriters : 0;
  in.buffer_records = cfg.buffer_records;
  in.parallel_files = parallel_files();
  // The output step: every time-varying variable's record, in the file's precision.
  double step = 0, longest = 0;
  auto seconds = [](const Frequency& f) { return f.months > 0 ? f.months * 365.0 / 12 * 86400 : f.seconds; };
  for (const FileState& fs : files) longest = std::max(longest, seconds(fs.cfg.output_freq));
  std::vector<double> per_period(transfers.size(), 0.0);
  for (const Var& v : vars) {
    if (!v.has_time || v.field < 0) continue;
    double n = 1;
    for (i64 s : v.shape) n *= static_cast<double>(s);
    step += n * (v.dbl ? 8 : 4);
    const double period = seconds(files[static_cast<std::size_t>(v.file)].cfg.output_freq);
    per_period[static_cast<std::size_t>(v.transfer)] += period > 0 ? longest / period : 1;
  }
  in.step_bytes = step;
  if (server_mode) {
    // A record of transfer t on a model rank: its local values in doubles, in the slot and in
    // the exchange's packed send buffer; the most any model rank holds (agreed by MAX).
    std::vector<double> bytes(transfers.size(), 0.0), most(transfers.size(), 0.0);
    for (std::size_t t = 0; t < transfers.size() && model; ++t)
      if (per_period[t] > 0 && t < fields.size()) bytes[t] = 2.0 * 8.0 * static_cast<double>(fields[t].def.decomp.size());
    MPI_Allreduce(bytes.data(), most.data(), static_cast<int>(bytes.size()), MPI_DOUBLE, MPI_MAX, xcomm);
    for (std::size_t t = 0; t < transfers.size(); ++t)
      if (per_period[t] > 0) {
        in.records_per_period.push_back(per_period[t]);
        in.record_bytes.push_back(most[t]);
      }
    // A sixteenth of the node's memory per rank on it, at most 1 GiB.
    MPI_Comm node = MPI_COMM_NULL;
    estuary::detail::check_mpi(MPI_Comm_split_type(xcomm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                               "MPI_Comm_split_type");
    int on_node = 1;
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    const double mem = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    double budget = std::min(double(1 << 30), mem > 0 ? mem / 16 / on_node : double(256 << 20)), least = 0;
    MPI_Allreduce(&budget, &least, 1, MPI_DOUBLE, MPI_MIN, xcomm);
    in.buffer_budget_bytes = least;
  }
  if (in.writers == 0 && could_use_writers(in)) bandwidth_into(in, xcomm);
  const Tuning t = choose_tuning(in);
  if (server_mode) {
    tuning.buffer_records = t.buffer_records;
    tuning.buffers_auto = t.buffers_auto;
    const std::size_t at = t.reason.find("buffer_records");
    if (at != std::string::npos) tuning.reason += "; " + t.reason.substr(at);
  } else {
    tuning = t;
    if (cfg.writers == 0) assign_writers(t.writers);
    tuning.writers = nwriters;
  }
  cfg.buffer_records = tuning.buffer_records;
  if (xrank == 0) std::cerr << "estuary: output " << cfg.source << ": " << tuning.reason << "\n";
}

}  // namespace estuary::io
