// Shared bits of the benchmark programs: argument parsing, memory readings, JSON output.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

// --key value pairs; flags without a value are "1".
class Args {
 public:
  Args(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string k = argv[i];
      if (k.rfind("--", 0) != 0) continue;
      k = k.substr(2);
      // (Values built with std::string(...) rather than assigned from char*: GCC 12's -Wrestrict
      // misfires on the inlined assignment.)
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) v_[k] = std::string(argv[++i]);
      else v_[k] = std::string(1, '1');
    }
  }
  std::string str(const std::string& k, const std::string& def) const {
    auto it = v_.find(k);
    return it == v_.end() ? def : it->second;
  }
  // A comma-separated list of numbers ("1e5,1e6"), or `def` when the key is absent.
  std::vector<std::int64_t> nums(const std::string& k, const std::string& def) const {
    std::vector<std::int64_t> v;
    std::stringstream in(str(k, def));
    std::string item;
    while (std::getline(in, item, ','))
      if (!item.empty()) v.push_back(static_cast<std::int64_t>(std::stod(item)));
    return v;
  }
  std::int64_t num(const std::string& k, std::int64_t def) const {
    auto it = v_.find(k);
    return it == v_.end() ? def : static_cast<std::int64_t>(std::stod(it->second));
  }
 private:
  std::map<std::string, std::string> v_;
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

// One JSON object on one line, keys in insertion order.
class Json {
 public:
  Json& add(const std::string& k, const std::string& v) {
    item(k) << '"' << v << '"';
    return *this;
  }
  Json& add(const std::string& k, const char* v) { return add(k, std::string(v)); }
  template <class T>
  Json& add(const std::string& k, T v) {
    item(k) << v;
    return *this;
  }
  std::string str() const {
    std::string s(1, '{');
    s += o_.str();
    s += '}';
    return s;
  }
 private:
  std::ostringstream& item(const std::string& k) {
    if (!first_) o_ << ", ";
    first_ = false;
    o_ << '"' << k << "\": ";
    return o_;
  }
  std::ostringstream o_;
  bool first_ = true;
};

}  // namespace bench
