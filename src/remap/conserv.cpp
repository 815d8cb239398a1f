// CONSERV corrections (see include/estuary/conserv.hpp), after OASIS3-MCT's oasis_advance_map.
#include "estuary/conserv.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cctype>
#include <string>

#include "estuary/error.hpp"

namespace estuary {

namespace {

constexpr std::array<ConservMode, 4> kModes{ConservMode::global, ConservMode::glbpos,
                                            ConservMode::basbal, ConservMode::baspos};

std::string str(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The valid-point weights of one side (area, or 0 where masked) and, for gather, the global
// index of each local point.
struct Side {
  std::int64_t n = 0;
  std::vector<double> wts;            // area where valid, else 0
  std::vector<char> valid;            // 1 where valid
  std::vector<std::int64_t> index;    // gather only
};

Side make_side(const ConservSide& s, SumMethod method, const char* which) {
  if (s.decomp == nullptr) throw Error("no decomposition given", std::string("CONSERV ") + which + " side");
  Side out;
  out.n = s.decomp->size();
  const auto n = static_cast<std::size_t>(out.n);
  if (s.area.size() != n)
    throw Error("area has " + std::to_string(s.area.size()) + " values, the decomposition " +
                    std::to_string(n) + " points",
                std::string("CONSERV ") + which + " side", "give one area per local point");
  if (!s.mask.empty() && s.mask.size() != n)
    throw Error("mask has " + std::to_string(s.mask.size()) + " values, the decomposition " +
                    std::to_string(n) + " points",
                std::string("CONSERV ") + which + " side", "give one mask value per local point, or none");
  out.wts.resize(n);
  out.valid.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool v = s.mask.empty() || s.mask[i] != 0;
    out.valid[i] = v ? 1 : 0;
    out.wts[i] = v ? s.area[i] : 0.0;
  }
  if (method == SumMethod::gather) out.index = s.decomp->to_indices();
  return out;
}

// Σ value·area over the valid points of one side, per field, over comm.
std::vector<double> side_integrals(const Side& side, std::span<const std::span<const double>> v, MPI_Comm comm,
                                   SumMethod method, std::vector<double>& buf, const char* which) {
  const std::size_t nf = v.size(), n = static_cast<std::size_t>(side.n);
  buf.resize(nf * n);
  std::vector<std::span<const double>> p(nf);
  for (std::size_t f = 0; f < nf; ++f) {
    if (v[f].size() != n)
      throw Error("field " + std::to_string(f) + " has " + std::to_string(v[f].size()) + " values, the " + which +
                      " side " + std::to_string(n),
                  "Conserv", "pass fields laid out as the decomposition of that side");
    double* q = buf.data() + f * n;
    for (std::size_t i = 0; i < n; ++i) q[i] = side.valid[i] ? v[f][i] * side.wts[i] : 0.0;
    p[f] = {q, n};
  }
  std::vector<double> out(nf);
  global_sums(p, out, comm, method, method == SumMethod::gather ? std::span<const std::int64_t>(side.index)
                                                                 : std::span<const std::int64_t>());
  return out;
}

}  // namespace

const char* name_of(ConservMode m) {
  switch (m) {
    case ConservMode::global: return "GLOBAL";
    case ConservMode::glbpos: return "GLBPOS";
    case ConservMode::basbal: return "BASBAL";
    case ConservMode::baspos: return "BASPOS";
  }
  return "?";
}

template <>
ConservMode from_name<ConservMode>(std::string_view name) {
  std::string up(name);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (ConservMode m : kModes)
    if (up == name_of(m)) return m;
  throw Error("unknown CONSERV mode \"" + std::string(name) + "\"", "from_name<ConservMode>",
              "use GLOBAL, GLBPOS, BASBAL or BASPOS");
}

struct Conserv::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  SumMethod method = SumMethod::reprosum;
  Side src, dst;
  double as = 0.0, ad = 0.0;
  std::vector<double> buf;  // products value·area of all fields, side by side
  void check_areas(ConservMode mode) const;
  // dst ← corrected dst for one field with integrals ss, sd (see the header's formulas).
  void correct_one(ConservMode mode, double ss, double sd, std::span<double> y, std::size_t f) const;

  // Ss, Sd of every field (2 per field: out[2f] = Ss, out[2f+1] = Sd).
  std::vector<double> sums(std::span<const RemapField> fields) {
    const std::size_t nf = fields.size();
    const auto ns = static_cast<std::size_t>(src.n), nd = static_cast<std::size_t>(dst.n);
    for (std::size_t f = 0; f < nf; ++f) {
      if (fields[f].src.size() != ns || fields[f].dst.size() != nd)
        throw Error("field " + std::to_string(f) + " has " + std::to_string(fields[f].src.size()) + " source and " +
                        std::to_string(fields[f].dst.size()) + " destination values, the sides " +
                        std::to_string(ns) + " and " + std::to_string(nd),
                    "Conserv::apply", "pass fields laid out as the source and destination decompositions");
    }
    buf.resize(nf * (ns + nd));
    std::vector<std::span<const double>> s(nf), d(nf);
    for (std::size_t f = 0; f < nf; ++f) {
      double* ps = buf.data() + f * (ns + nd);
      double* pd = ps + ns;
      // Masked points contribute exactly 0 (their values may be fill values, even NaN).
      for (std::size_t i = 0; i < ns; ++i) ps[i] = src.valid[i] ? fields[f].src[i] * src.wts[i] : 0.0;
      for (std::size_t i = 0; i < nd; ++i) pd[i] = dst.valid[i] ? fields[f].dst[i] * dst.wts[i] : 0.0;
      s[f] = {ps, ns};
      d[f] = {pd, nd};
    }
    std::vector<double> out(2 * nf);
    if (method == SumMethod::gather) {
      std::vector<double> os(nf), od(nf);
      global_sums(s, os, comm, method, src.index);
      global_sums(d, od, comm, method, dst.index);
      for (std::size_t f = 0; f < nf; ++f) {
        out[2 * f] = os[f];
        out[2 * f + 1] = od[f];
      }
    } else {
      std::vector<std::span<const double>> all(2 * nf);
      for (std::size_t f = 0; f < nf; ++f) {
        all[2 * f] = s[f];
        all[2 * f + 1] = d[f];
      }
      global_sums(all, out, comm, method);
    }
    return out;
  }
};

Conserv::Conserv(const ConservSide& src, const ConservSide& dst, MPI_Comm comm, SumMethod method)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.comm = comm;
  m.method = method;
  m.src = make_side(src, method, "source");
  m.dst = make_side(dst, method, "destination");
  const std::array<std::span<const double>, 2> areas{std::span<const double>(m.src.wts),
                                                     std::span<const double>(m.dst.wts)};
  std::array<double, 2> a{};
  if (method == SumMethod::gather) {
    global_sums(std::span(areas.data(), 1), std::span(a.data(), 1), comm, method, m.src.index);
    global_sums(std::span(areas.data() + 1, 1), std::span(a.data() + 1, 1), comm, method, m.dst.index);
  } else {
    global_sums(areas, a, comm, method);
  }
  m.as = a[0];
  m.ad = a[1];
}

Conserv::~Conserv() = default;
Conserv::Conserv(Conserv&&) noexcept = default;
Conserv& Conserv::operator=(Conserv&&) noexcept = default;

double Conserv::src_area() const { return impl_->as; }
double Conserv::dst_area() const { return impl_->ad; }
SumMethod Conserv::method() const { return impl_->method; }

std::vector<std::pair<double, double>> Conserv::integrals(std::span<const RemapField> fields) {
  const std::vector<double> s = impl_->sums(fields);
  std::vector<std::pair<double, double>> out(fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f) out[f] = {s[2 * f], s[2 * f + 1]};
  return out;
}

void Conserv::apply(ConservMode mode, std::span<const RemapField> fields) {
  Impl& m = *impl_;
  m.check_areas(mode);
  const std::vector<double> s = m.sums(fields);
  for (std::size_t f = 0; f < fields.size(); ++f) m.correct_one(mode, s[2 * f], s[2 * f + 1], fields[f].dst, f);
}

std::vector<double> Conserv::source_integrals(std::span<const std::span<const double>> src, MPI_Comm src_comm) {
  return side_integrals(impl_->src, src, src_comm, impl_->method, impl_->buf, "source");
}

void Conserv::correct(ConservMode mode, std::span<const double> ss, std::span<const std::span<double>> dst,
                      MPI_Comm dst_comm) {
  Impl& m = *impl_;
  m.check_areas(mode);
  if (ss.size() != dst.size())
    throw Error(std::to_string(ss.size()) + " source integrals for " + std::to_string(dst.size()) + " fields",
                "Conserv::correct");
  std::vector<std::span<const double>> d(dst.begin(), dst.end());
  const std::vector<double> sd = side_integrals(m.dst, d, dst_comm, m.method, m.buf, "destination");
  for (std::size_t f = 0; f < dst.size(); ++f) m.correct_one(mode, ss[f], sd[f], dst[f], f);
}

void Conserv::Impl::check_areas(ConservMode mode) const {
  const std::string where = std::string("CONSERV ") + name_of(mode) + " with " + name_of(method);
  if ((mode == ConservMode::global || mode == ConservMode::basbal) && ad == 0.0)
    throw Error("the valid destination area sums to zero", where, "check the destination areas and mask");
  if ((mode == ConservMode::basbal || mode == ConservMode::baspos) && as == 0.0)
    throw Error("the valid source area sums to zero", where, "check the source areas and mask");
}

void Conserv::Impl::correct_one(ConservMode mode, double ss, double sd, std::span<double> y, std::size_t f) const {
  const std::size_t nd = static_cast<std::size_t>(dst.n);
  if (mode == ConservMode::global || mode == ConservMode::basbal) {
    const double z = mode == ConservMode::global ? (sd - ss) / ad : (sd - ss * (ad / as)) / ad;
    for (std::size_t i = 0; i < nd; ++i)
      if (dst.valid[i]) y[i] -= z;
    return;
  }
  if (sd == 0.0) {
    if (ss != 0.0)
      throw Error("the destination integral is zero, the source one " + str(ss) + " is not",
                  std::string("CONSERV ") + name_of(mode) + " with " + name_of(method) + ", field " + std::to_string(f),
                  "a multiplicative correction cannot restore it: use GLOBAL or BASBAL");
    return;
  }
  const double z = mode == ConservMode::glbpos ? ss / sd : (ss / sd) * (ad / as);
  for (std::size_t i = 0; i < nd; ++i)
    if (dst.valid[i]) y[i] *= z;
}

void Conserv::apply(ConservMode mode, std::span<const double> src, std::span<double> dst) {
  const RemapField f{src, dst};
  apply(mode, std::span<const RemapField>(&f, 1));
}

void conserv(ConservMode mode, const ConservSide& src, std::span<const double> src_field,
             const ConservSide& dst, std::span<double> dst_field, MPI_Comm comm, SumMethod method) {
  Conserv c(src, dst, comm, method);
  c.apply(mode, src_field, dst_field);
}

}  // namespace estuary
