// Grid generators and spherical cell areas. Every generator maps a global index to one cell
// without any global array, so GridGen::make(part) costs O(part) (plus O(rows) for Gaussian
// latitudes and reduced-row offsets).
#include "estuary/grid.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <numbers>

#include "common/mpi_util.hpp"
#include "estuary/error.hpp"

namespace estuary {

using i64 = std::int64_t;

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;

struct Vec {
  double x, y, z;
};
Vec unit(double lon_deg, double lat_deg) {
  const double lo = lon_deg * kDeg, la = lat_deg * kDeg;
  return {std::cos(la) * std::cos(lo), std::cos(la) * std::sin(lo), std::sin(la)};
}
Vec sub(Vec a, Vec b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
Vec cross(Vec a, Vec b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
double dot(Vec a, Vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
void to_lonlat(Vec v, double& lon, double& lat) {
  lon = std::atan2(v.y, v.x) / kDeg;
  lat = std::atan2(v.z, std::hypot(v.x, v.y)) / kDeg;
}

// Gaussian latitudes (degrees, south to north) and their quadrature weights (sum 2).
void gaussian_latitudes(i64 n, std::vector<double>& lat, std::vector<double>& w) {
  lat.assign(static_cast<std::size_t>(n), 0.0);
  w.assign(static_cast<std::size_t>(n), 0.0);
  for (i64 k = 0; k < n; ++k) {
    double x = std::cos(kPi * (static_cast<double>(k) + 0.75) / (static_cast<double>(n) + 0.5));
    double dp = 1.0;
    for (int it = 0; it < 100; ++it) {  // Newton on the Legendre polynomial P_n
      double p0 = 1.0, p1 = x;
      for (i64 m = 2; m <= n; ++m) {
        const double p2 = ((2.0 * m - 1.0) * x * p1 - (m - 1.0) * p0) / static_cast<double>(m);
        p0 = p1;
        p1 = p2;
      }
      dp = static_cast<double>(n) * (x * p1 - p0) / (x * x - 1.0);
      const double dx = p1 / dp;
      x -= dx;
      if (std::abs(dx) < 1e-16) break;
    }
    const std::size_t at = static_cast<std::size_t>(n - 1 - k);  // x descends with k
    lat[at] = std::asin(x) / kDeg;
    w[at] = 2.0 / ((1.0 - x * x) * dp * dp);
  }
}

// Cell edges (degrees) between Gaussian rows: sin(edge) advances by each weight, so a band's
// area is exactly 2*pi times its weight.
std::vector<double> gaussian_edges(const std::vector<double>& w) {
  std::vector<double> e(w.size() + 1);
  double s = -1.0;
  e[0] = -90.0;
  for (std::size_t j = 0; j < w.size(); ++j) {
    s += w[j];
    e[j + 1] = j + 1 == w.size() ? 90.0 : std::asin(std::clamp(s, -1.0, 1.0)) / kDeg;
  }
  return e;
}

// The smallest 2^a 3^b 5^c >= n (FFT-friendly row lengths, as IFS grids use).
i64 smooth_at_least(i64 n) {
  for (i64 m = std::max<i64>(n, 1);; ++m) {
    i64 r = m;
    for (i64 f : {2, 3, 5})
      while (r % f == 0) r /= f;
    if (r == 1) return m;
  }
}

// A lon-lat box as a counter-clockwise quadrilateral.
void box_corners(double w, double e, double s, double n, double* clon, double* clat) {
  const double lo[4] = {w, e, e, w}, la[4] = {s, s, n, n};
  std::copy(lo, lo + 4, clon);
  std::copy(la, la + 4, clat);
}

// Made-up continents: spherical caps (centre lon, lat, radius in degrees) and Antarctica.
bool on_land(double lon, double lat) {
  static const std::array<std::array<double, 3>, 5> caps = {{
      {20, 5, 30}, {100, 50, 35}, {-100, 45, 28}, {-60, -15, 20}, {135, -25, 15}}};
  if (lat < -70) return true;
  const Vec p = unit(lon, lat);
  for (const auto& c : caps)
    if (dot(p, unit(c[0], c[1])) > std::cos(c[2] * kDeg)) return true;
  return false;
}

}  // namespace

const char* name_of(GridKind k) {
  switch (k) {
    case GridKind::lonlat: return "lonlat";
    case GridKind::gaussian: return "gaussian";
    case GridKind::reduced_gaussian: return "reduced_gaussian";
    case GridKind::curvilinear: return "curvilinear";
    case GridKind::unstructured: return "unstructured";
  }
  return "?";
}

template <>
GridKind from_name<GridKind>(std::string_view name) {
  static constexpr GridKind all[] = {GridKind::lonlat, GridKind::gaussian, GridKind::reduced_gaussian,
                                     GridKind::curvilinear, GridKind::unstructured};
  return detail::enum_named(name, all, "grid kind");
}

std::vector<std::int64_t> grid_dims_of(GridKind kind, std::span<const std::int64_t> sizes) {
  const bool two_d = kind != GridKind::reduced_gaussian && kind != GridKind::unstructured;
  if (sizes.empty() || sizes.size() > 2 || (two_d && sizes.size() != 2))
    throw Error("grid dims of " + std::to_string(sizes.size()) + " values for kind " + name_of(kind), "",
                "give (nx, ny), longitude fastest, for 2-D kinds and (n,) otherwise");
  if (two_d) return {sizes.begin(), sizes.end()};
  std::int64_t n = 1;
  for (std::int64_t s : sizes) n *= s;
  return {n};
}

GridKind grid_kind_of_dims(std::size_t ndims) { return ndims == 2 ? GridKind::curvilinear : GridKind::unstructured; }

double spherical_polygon_area(std::span<const double> lon, std::span<const double> lat) {
  const std::size_t n = std::min(lon.size(), lat.size());
  if (n < 3) return 0.0;
  const Vec a = unit(lon[0], lat[0]);
  double sum = 0.0;
  for (std::size_t k = 1; k + 1 < n; ++k) {
    const Vec b = unit(lon[k], lat[k]), c = unit(lon[k + 1], lat[k + 1]);
    // Van Oosterom & Strackee: tan(E/2) = a.(b x c) / (1 + a.b + b.c + c.a). The triple
    // product is taken on differences from `a`, which keeps small cells accurate.
    const double num = dot(a, cross(sub(b, a), sub(c, a)));
    const double den = 1.0 + dot(a, b) + dot(b, c) + dot(c, a);
    sum += 2.0 * std::atan2(num, den);
  }
  return std::abs(sum);
}

void Grid::check() const {
  const std::size_t n = lon.size(), nc = n * static_cast<std::size_t>(std::max(ncorner, 0));
  std::string bad;
  if (lat.size() != n) bad = "lat";
  else if (!points.empty() && points.size() != n) bad = "points";
  else if (corner_lon.size() != nc || corner_lat.size() != nc) bad = "corner_lon/corner_lat";
  else if (!mask.empty() && mask.size() != n) bad = "mask";
  else if (!area.empty() && area.size() != n) bad = "area";
  else if (!frac.empty() && frac.size() != n) bad = "frac";
  if (!bad.empty())
    throw Error("grid array " + bad + " does not match the " + std::to_string(n) +
                    " cell centres (ncorner " + std::to_string(ncorner) + ")",
                "grid " + name + ", " + detail::world_rank_label());
}

namespace {

// FNV-1a over bytes, continuing from h.
std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

}  // namespace

std::uint64_t grid_fingerprint(const Grid& g, MPI_Comm comm) {
  g.check();
  // A sum of per-point hashes: independent of which rank holds a point and in what order.
  std::uint64_t sum = 0;
  const std::size_t nc = static_cast<std::size_t>(std::max(g.ncorner, 0));
  for (i64 k = 0; k < g.size(); ++k) {
    const auto u = static_cast<std::size_t>(k);
    const i64 gi = g.global_index(k);
    const std::int32_t m = g.valid(k) ? 1 : 0;
    std::uint64_t h = 14695981039346656037ULL;
    h = fnv1a(h, &gi, sizeof gi);
    h = fnv1a(h, &g.lon[u], sizeof(double));
    h = fnv1a(h, &g.lat[u], sizeof(double));
    if (nc > 0) {
      h = fnv1a(h, &g.corner_lon[u * nc], nc * sizeof(double));
      h = fnv1a(h, &g.corner_lat[u * nc], nc * sizeof(double));
    }
    h = fnv1a(h, &m, sizeof m);
    sum += h * 0x9E3779B97F4A7C15ULL + (h >> 29);
  }
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  // Ranks holding no point may not know the corners: the shape from those that do.
  i64 shape[2] = {g.global_size, g.size() > 0 ? static_cast<i64>(nc) : 0};
  detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, shape, 2, MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce");
  return fnv1a(sum, shape, sizeof shape);
}

void Grid::compute_areas() {
  check();
  if (ncorner < 3)
    throw Error("cell areas need at least 3 corners per cell", "grid " + name,
                "give the corners or the areas");
  area.resize(lon.size());
  const std::size_t nc = static_cast<std::size_t>(ncorner);
  // Cells of the lon-lat kinds are bounded by meridians and latitude circles, not great
  // circles: their exact area is dlon * (sin(north) - sin(south)).
  const bool boxes = nc == 4 && (kind == GridKind::lonlat || kind == GridKind::gaussian ||
                                 kind == GridKind::reduced_gaussian);
  for (std::size_t k = 0; k < lon.size(); ++k) {
    const double* clo = corner_lon.data() + k * nc;
    const double* cla = corner_lat.data() + k * nc;
    if (boxes) {
      const auto [s, n] = std::minmax({cla[0], cla[1], cla[2], cla[3]});
      double lo = clo[0], hi = clo[0];
      for (int c = 1; c < 4; ++c) {  // unwrap round the first corner
        const double x = clo[0] + std::remainder(clo[c] - clo[0], 360.0);
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
      area[k] = (hi - lo) * kDeg * (std::sin(n * kDeg) - std::sin(s * kDeg));
    } else {
      area[k] = spherical_polygon_area({clo, nc}, {cla, nc});
    }
  }
}

// ---- GridGen ----

struct GridGen::Impl {
  GridKind kind = GridKind::unstructured;
  std::string name;
  std::vector<i64> dims;
  i64 size = 0;
  int ncorner = 4;
  bool land = false;
  // Cell g: centre and ncorner corners (degrees).
  std::function<void(i64 g, double& lon, double& lat, double* clon, double* clat)> cell;
};

GridGen GridGen::lonlat(i64 nlon, i64 nlat) {
  auto im = std::make_shared<Impl>();
  im->kind = GridKind::lonlat;
  im->name = "lonlat_" + std::to_string(nlon) + "x" + std::to_string(nlat);
  im->dims = {nlon, nlat};
  im->size = nlon * nlat;
  const double dlon = 360.0 / static_cast<double>(nlon), dlat = 180.0 / static_cast<double>(nlat);
  im->cell = [=](i64 g, double& lon, double& lat, double* clon, double* clat) {
    const i64 i = g % nlon, j = g / nlon;
    lon = static_cast<double>(i) * dlon;
    lat = -90.0 + (static_cast<double>(j) + 0.5) * dlat;
    box_corners(lon - dlon / 2, lon + dlon / 2, -90.0 + static_cast<double>(j) * dlat,
                j + 1 == nlat ? 90.0 : -90.0 + static_cast<double>(j + 1) * dlat, clon, clat);
  };
  return GridGen(im);
}

GridGen GridGen::gaussian(i64 nlon, i64 nlat) {
  auto im = std::make_shared<Impl>();
  im->kind = GridKind::gaussian;
  im->name = "gaussian_" + std::to_string(nlon) + "x" + std::to_string(nlat);
  im->dims = {nlon, nlat};
  im->size = nlon * nlat;
  std::vector<double> lats, w;
  gaussian_latitudes(nlat, lats, w);
  const std::vector<double> edges = gaussian_edges(w);
  const double dlon = 360.0 / static_cast<double>(nlon);
  im->cell = [=](i64 g, double& lon, double& lat, double* clon, double* clat) {
    const std::size_t i = static_cast<std::size_t>(g % nlon), j = static_cast<std::size_t>(g / nlon);
    lon = static_cast<double>(i) * dlon;
    lat = lats[j];
    box_corners(lon - dlon / 2, lon + dlon / 2, edges[j], edges[j + 1], clon, clat);
  };
  return GridGen(im);
}

GridGen GridGen::reduced_gaussian(i64 n) {
  auto im = std::make_shared<Impl>();
  im->kind = GridKind::reduced_gaussian;
  im->name = "reduced_gaussian_n" + std::to_string(n);
  std::vector<double> lats, w;
  gaussian_latitudes(2 * n, lats, w);
  const std::vector<double> edges = gaussian_edges(w);
  std::vector<i64> first(lats.size() + 1, 0);  // global index of each row's first point
  for (std::size_t j = 0; j < lats.size(); ++j) {
    // 4n points per circle at the equator's spacing, plus a margin of n/25 points that, like
    // the IFS rows, keeps high-latitude rows finer (N400 gives about 843 000 points, as T799).
    const double want = 4.0 * static_cast<double>(n) * std::cos(lats[j] * kDeg) + static_cast<double>(n) / 25.0;
    first[j + 1] = first[j] + smooth_at_least(std::max<i64>(18, static_cast<i64>(std::ceil(want - 1e-9))));
  }
  im->size = first.back();
  im->dims = {im->size};
  im->cell = [=](i64 g, double& lon, double& lat, double* clon, double* clat) {
    const std::size_t j = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), g) - first.begin() - 1);
    const i64 nlon = first[j + 1] - first[j];
    const double dlon = 360.0 / static_cast<double>(nlon);
    lon = static_cast<double>(g - first[j]) * dlon;
    lat = lats[j];
    box_corners(lon - dlon / 2, lon + dlon / 2, edges[j], edges[j + 1], clon, clat);
  };
  return GridGen(im);
}

GridGen GridGen::t799() { return reduced_gaussian(400); }

GridGen GridGen::tripolar(i64 nx, i64 ny) {
  auto im = std::make_shared<Impl>();
  im->kind = GridKind::curvilinear;
  im->name = "tripolar_" + std::to_string(nx) + "x" + std::to_string(ny);
  im->dims = {nx, ny};
  im->size = nx * ny;
  const double south = -78.0, join = 40.0, axis = 73.0;  // degrees; poles over 73E and 107W
  const double dlon = 360.0 / static_cast<double>(nx);
  auto merc = [](double lat) { return std::log(std::tan(kPi / 4 + lat * kDeg / 2)); };
  // Isotropic Mercator rows up to the join latitude, the rest in the cap (at least 2 rows).
  const i64 want = static_cast<i64>(std::lround((merc(join) - merc(south)) / (dlon * kDeg)));
  const i64 ns = std::clamp<i64>(want, 1, std::max<i64>(1, ny - 2)), nc = ny - ns;
  const double y0 = merc(south), dy = (merc(join) - merc(south)) / static_cast<double>(ns);
  const double rho_c = std::tan((90.0 - join) * kDeg / 2);  // polar stereographic radius
  const double f = 0.6 * rho_c;                              // the two poles, about 59N
  // Corner row r in [0, ny]: Mercator rows below ns, cap rows above. Position (lon, row).
  auto point = [=](double lon_deg, double row, double& plon, double& plat) {
    if (row <= static_cast<double>(ns)) {
      plon = lon_deg;
      plat = (2 * std::atan(std::exp(y0 + row * dy)) - kPi / 2) / kDeg;
      return;
    }
    // Nested ellipses in the stereographic plane: t = 1 on the join circle, t = 0 on the fold
    // (the segment between the poles), semi-axes A = f + (rho_c - f) t, B = rho_c t.
    const double t = 1.0 - (row - static_cast<double>(ns)) / static_cast<double>(nc);
    const double nu = (lon_deg - axis) * kDeg;
    const double x = (f + (rho_c - f) * t) * std::cos(nu), y = rho_c * t * std::sin(nu);
    const double rho = std::hypot(x, y);
    plat = 90.0 - 2.0 * std::atan(rho) / kDeg;
    plon = rho > 0 ? axis + std::atan2(y, x) / kDeg : 0.0;
  };
  im->cell = [=](i64 g, double& lon, double& lat, double* clon, double* clat) {
    const i64 i = g % nx, j = g / nx;
    const double lc = static_cast<double>(i) * dlon, rj = static_cast<double>(j);
    point(lc, rj + 0.5, lon, lat);
    const double lo[4] = {lc - dlon / 2, lc + dlon / 2, lc + dlon / 2, lc - dlon / 2};
    const double ro[4] = {rj, rj, rj + 1, rj + 1};
    for (int k = 0; k < 4; ++k) point(lo[k], ro[k], clon[k], clat[k]);
  };
  return GridGen(im);
}

GridGen GridGen::orca025() { return tripolar(1442, 1021); }

GridGen GridGen::cubed_sphere(i64 n) {
  auto im = std::make_shared<Impl>();
  im->kind = GridKind::unstructured;
  im->name = "cubed_sphere_" + std::to_string(n);
  im->size = 6 * n * n;
  im->dims = {im->size};
  auto face_point = [n](i64 face, i64 a, i64 b) {
    const double u = std::tan(-kPi / 4 + static_cast<double>(a) * kPi / 2 / static_cast<double>(n));
    const double v = std::tan(-kPi / 4 + static_cast<double>(b) * kPi / 2 / static_cast<double>(n));
    Vec p{};
    switch (face) {  // four faces round the equator, then north and south
      case 0: p = {1, u, v}; break;
      case 1: p = {-u, 1, v}; break;
      case 2: p = {-1, -u, v}; break;
      case 3: p = {u, -1, v}; break;
      case 4: p = {-v, u, 1}; break;
      default: p = {v, u, -1}; break;
    }
    const double r = std::sqrt(dot(p, p));
    return Vec{p.x / r, p.y / r, p.z / r};
  };
  im->cell = [=](i64 g, double& lon, double& lat, double* clon, double* clat) {
    const i64 face = g / (n * n), a = g % n, b = (g / n) % n;
    Vec c[4] = {face_point(face, a, b), face_point(face, a + 1, b), face_point(face, a + 1, b + 1),
                face_point(face, a, b + 1)};
    const Vec m = {c[0].x + c[1].x + c[2].x + c[3].x, c[0].y + c[1].y + c[2].y + c[3].y,
                   c[0].z + c[1].z + c[2].z + c[3].z};
    if (dot(m, cross(sub(c[1], c[0]), sub(c[2], c[0]))) < 0) std::swap(c[1], c[3]);
    to_lonlat(m, lon, lat);
    for (int k = 0; k < 4; ++k) to_lonlat(c[k], clon[k], clat[k]);
  };
  return GridGen(im);
}

GridGen GridGen::with_land() const {
  auto im = std::make_shared<Impl>(*impl_);
  im->land = true;
  im->name += "_land";
  return GridGen(im);
}

const char* GridGen::recipe_forms() {
  return "lonlat:NLONxNLAT, gaussian:NLONxNLAT, tripolar:NXxNY, reduced_gaussian:N, cubed_sphere:N, t799, orca025 "
         "(\"+land\" at the end: with the analytic land mask)";
}

GridGen GridGen::from_name(std::string_view recipe) {
  const auto refuse = [&] {
    std::string what = "grid \"";
    what.append(recipe).append("\" is not a recipe");
    return Error(what, "GridGen::from_name", std::string("recipes: ") + recipe_forms());
  };
  std::string_view rest = recipe;
  bool land = false;
  if (constexpr std::string_view suffix = "+land"; rest.ends_with(suffix)) {
    land = true;
    rest.remove_suffix(suffix.size());
  }
  const std::size_t colon = rest.find(':');
  const std::string_view kind = rest.substr(0, colon);
  // The dimensions after the colon: positive integers separated by 'x' (or 'X').
  std::vector<i64> dims;
  if (colon != std::string_view::npos) {
    std::string_view d = rest.substr(colon + 1);
    while (true) {
      const std::size_t x = d.find_first_of("xX");
      const std::string_view num = d.substr(0, x);
      i64 v = 0;
      const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (ec != std::errc() || end != num.data() + num.size() || num.empty() || v <= 0) throw refuse();
      dims.push_back(v);
      if (x == std::string_view::npos) break;
      d.remove_prefix(x + 1);
    }
  }
  const int want = kind_dims(kind);
  if (want < 0 || static_cast<std::size_t>(want) != dims.size() || (want == 0 && colon != std::string_view::npos))
    throw refuse();
  GridGen g = from_kind(kind, want > 0 ? dims[0] : 0, want > 1 ? dims[1] : 0);
  return land ? g.with_land() : g;
}

int GridGen::kind_dims(std::string_view kind) {
  if (kind == "lonlat" || kind == "gaussian" || kind == "tripolar") return 2;
  if (kind == "reduced_gaussian" || kind == "cubed_sphere") return 1;
  if (kind == "t799" || kind == "orca025") return 0;
  return -1;
}

GridGen GridGen::from_kind(std::string_view kind, i64 n1, i64 n2) {
  const int want = kind_dims(kind);
  std::string named = "grid kind \"";
  named.append(kind).append("\"");
  if (want < 0) throw Error("unknown " + named, "GridGen::from_kind", std::string("recipes: ") + recipe_forms());
  if (want >= 1 && n1 <= 0) throw Error(named + ": argument 'n1' must be positive", "GridGen::from_kind");
  if (want >= 2 && n2 <= 0) throw Error(named + ": argument 'n2' must be positive", "GridGen::from_kind");
  if (kind == "lonlat") return lonlat(n1, n2);
  if (kind == "gaussian") return gaussian(n1, n2);
  if (kind == "tripolar") return tripolar(n1, n2);
  if (kind == "reduced_gaussian") return reduced_gaussian(n1);
  if (kind == "cubed_sphere") return cubed_sphere(n1);
  return kind == "t799" ? t799() : orca025();
}

GridKind GridGen::kind() const { return impl_->kind; }
const std::string& GridGen::name() const { return impl_->name; }
const std::vector<i64>& GridGen::dims() const { return impl_->dims; }
i64 GridGen::size() const { return impl_->size; }
int GridGen::ncorner() const { return impl_->ncorner; }

Grid GridGen::make() const { return make(Decomp::stripes(impl_->size, {{0, impl_->size, 1}})); }

Grid GridGen::make(const Decomp& part) const {
  const Impl& im = *impl_;
  if (part.global_size() != im.size)
    throw Error("the decomposition covers " + std::to_string(part.global_size()) +
                    " points, the grid has " + std::to_string(im.size),
                "grid " + im.name + ", " + detail::world_rank_label());
  Grid g;
  g.kind = im.kind;
  g.name = im.name;
  g.dims = im.dims;
  g.global_size = im.size;
  g.ncorner = im.ncorner;
  const std::size_t n = static_cast<std::size_t>(part.size()), nc = static_cast<std::size_t>(im.ncorner);
  g.points = part.to_indices();
  g.lon.resize(n);
  g.lat.resize(n);
  g.corner_lon.resize(n * nc);
  g.corner_lat.resize(n * nc);
  for (std::size_t k = 0; k < n; ++k)
    im.cell(g.points[k], g.lon[k], g.lat[k], &g.corner_lon[k * nc], &g.corner_lat[k * nc]);
  if (im.land) {
    g.mask.resize(n);
    for (std::size_t k = 0; k < n; ++k) g.mask[k] = on_land(g.lon[k], g.lat[k]) ? 0 : 1;
  }
  bool in_order = true;  // a whole grid in order keeps `points` empty, as documented
  for (std::size_t k = 0; k < n && in_order; ++k) in_order = g.points[k] == static_cast<i64>(k);
  if (in_order && static_cast<i64>(n) == im.size) g.points.clear();
  g.compute_areas();
  return g;
}

}  // namespace estuary
