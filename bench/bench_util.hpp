// Shared bits of the benchmark programs: the command line (CLI11), memory readings, JSON output
// (nlohmann::json).
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace bench {

// The command line of a benchmark program (CLI11): every option is declared with its help and
// default, and an unknown or malformed option ends the run with an error instead of running
// something else (`--iteratons 3` used to be ignored).
class Cli {
 public:
  explicit Cli(const std::string& what) : app_(what) {
    app_.get_formatter()->column_width(34);
    app_.add_flag("--dry-run", dry_run_, "check the options, print them and run nothing");
  }

  // --name VALUE. Integers also accept the scientific notation the docs use (--n 1e7).
  template <class T>
  CLI::Option* opt(const std::string& name, T& var, const std::string& help) {
    CLI::Option* o = app_.add_option("--" + name, var, help)->capture_default_str();
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) o->transform(integer_notation());
    return o;
  }
  // --name a,b,c
  template <class T>
  CLI::Option* list(const std::string& name, std::vector<T>& var, const std::string& help) {
    CLI::Option* o = app_.add_option("--" + name, var, help)->delimiter(',')->capture_default_str();
    if constexpr (std::is_integral_v<T>) o->transform(integer_notation());
    return o;
  }
  // --name [0|1]; a bare --name means 1.
  CLI::Option* flag(const std::string& name, bool& var, const std::string& help) {
    return app_.add_option("--" + name, var, help + " (default " + (var ? "1" : "0") + "; a bare --" + name + " is 1)")
        ->expected(0, 1)
        ->default_str("1")
        ->option_text("[0|1]");
  }

  // Parses the same argv on every rank. --help, or an error, is printed by rank 0 only (every rank
  // when MPI is not initialised) and ends the program on every rank with CLI11's exit code.
  void parse(int argc, char** argv) {
    try {
      app_.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      int initialized = 0, rank = 0;
      MPI_Initialized(&initialized);
      if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      const int code = rank == 0 ? app_.exit(e) : e.get_exit_code();
      if (initialized) MPI_Finalize();
      std::exit(code);
    }
    if (dry_run_) {  // what would run, as a config file of the options (defaults included)
      int initialized = 0, rank = 0;
      MPI_Initialized(&initialized);
      if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      if (rank == 0) std::fputs(app_.config_to_str(true, false).c_str(), stdout);
      if (initialized) MPI_Finalize();
      std::exit(0);
    }
  }
  bool given(const std::string& name) const { return app_.count("--" + name) > 0; }

 private:
  // "1e5" -> "100000"; anything else is left to CLI11's own conversion (and its error message).
  static std::function<std::string(std::string)> integer_notation() {
    return [](std::string s) {
      if (s.find_first_of("eE.") == std::string::npos) return s;
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (end && *end == '\0' && d == static_cast<double>(static_cast<std::int64_t>(d)))
        return std::to_string(static_cast<std::int64_t>(d));
      return s;
    };
  }
  CLI::App app_;
  bool dry_run_ = false;
};

// A value of /proc/self/status in MiB (VmRSS: current, VmHWM: peak).
inline double proc_status_mb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::atof(line.c_str() + std::string(key).size() + 1) / 1024.0;
  return 0;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

inline double max_over_ranks(double x, MPI_Comm comm) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

// One JSON object on one line, keys in insertion order, written by nlohmann::json (so strings
// are escaped and numbers are valid JSON: NaN and infinities become null).
class Json {
 public:
  template <class T>
  Json& add(const std::string& k, const T& v) {
    j_[k] = v;
    return *this;
  }
  std::string str() const { return j_.dump(); }

 private:
  nlohmann::ordered_json j_;
};

}  // namespace bench
