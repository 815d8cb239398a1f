// estuary::Error — every failure estuary reports: what went wrong, where, and what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace estuary {

class Error : public std::runtime_error {
 public:
  // what: the fault ("destination index 17 has no source"); where: the place ("rank 3",
  // "field 2", "file w.nc, variable S"); fix: what the user can do about it (may be empty).
  Error(std::string what, std::string where, std::string fix = {})
      : std::runtime_error(compose(what, where, fix)),
        what_(std::move(what)), where_(std::move(where)), fix_(std::move(fix)) {}

  const std::string& fault() const noexcept { return what_; }
  const std::string& where() const noexcept { return where_; }
  const std::string& fix() const noexcept { return fix_; }

 private:
  static std::string compose(const std::string& what, const std::string& where,
                             const std::string& fix) {
    std::string m = "estuary: " + what;
    if (!where.empty()) m += " (" + where + ")";
    if (!fix.empty()) m += "; " + fix;
    return m;
  }
  std::string what_, where_, fix_;
};

// An MPI call failed (the C API maps it to EST_ERR_MPI).
class MpiError : public Error {
 public:
  using Error::Error;
};

}  // namespace estuary
