#include "sphere.hpp"

#include <algorithm>
#include <cmath>

namespace estuary::sphere {

namespace {

// Points closer than this (unit vectors) are one point: corners at a pole given with different
// longitudes, and crossings that land on a vertex.
constexpr double kSamePoint = 1e-14;
// Crossings closer than this (radians) to an end of an edge are that end.
constexpr double kEndAngle = 1e-13;

double wrap_pi(double a) {  // into (-pi, pi]
  while (a > M_PI) a -= 2 * M_PI;
  while (a <= -M_PI) a += 2 * M_PI;
  return a;
}

double lon_of(Vec3 a) { return std::atan2(a.y, a.x); }

// The longitude from a to b, in (-pi, pi]: one atan2 of the angle between their projections.
double dlon(Vec3 a, Vec3 b) { return std::atan2(a.x * b.y - a.y * b.x, a.x * b.x + a.y * b.y); }

bool same_point(Vec3 a, Vec3 b) {
  const Vec3 d = a - b;
  return dot(d, d) < kSamePoint * kSamePoint;
}

// Signed area of the great-circle triangle (c, a, b): Van Oosterom & Strackee, with the triple
// product taken on differences from c so that small triangles keep their digits.
double triangle(Vec3 c, Vec3 a, Vec3 b) {
  const double num = dot(c, cross(a - c, b - c));
  const double den = 1.0 + dot(c, a) + dot(a, b) + dot(b, c);
  return 2.0 * std::atan2(num, den);
}

// The signed area between the latitude arc a->b and the great-circle arc a->b: the lens that
// the arc adds to a polygon whose fan uses the chord. The great circle runs poleward of the
// latitude circle, so going east (interior north) the lens is inside in the northern
// hemisphere and outside in the southern one.
double latitude_lens(Vec3 a, Vec3 b) {
  const double z0 = a.z;
  if (std::abs(z0) < 1e-15 || std::abs(z0) >= 1.0) return 0.0;
  const double dl = dlon(a, b);
  if (dl == 0.0) return 0.0;
  const Vec3 pole{0, 0, z0 > 0 ? 1.0 : -1.0};
  const double sector = std::abs(dl) * (1.0 - std::abs(z0));
  const double lens = sector - std::abs(triangle(pole, a, b));
  return (dl > 0 ? 1.0 : -1.0) * (z0 > 0 ? 1.0 : -1.0) * lens;
}

// Up to two points where the edge a->b (kind t) crosses the boundary of h, strictly between
// a and b, in order along the edge. Returns how many.
int crossings(Vec3 a, Vec3 b, Edge t, const HalfSpace& h, Vec3 out[2]) {
  if (t == Edge::great_circle && h.type == Edge::great_circle) {
    const double fa = h.f(a), fb = h.f(b);
    if ((fa > kOnBoundary && fb < -kOnBoundary) || (fa < -kOnBoundary && fb > kOnBoundary)) {
      out[0] = normalized(std::abs(fa) * b + std::abs(fb) * a);
      return 1;
    }
    return 0;
  }
  if (t == Edge::great_circle) {  // a great-circle arc against a circle of latitude
    const Vec3 w = b - dot(a, b) * a;
    const double wn = norm(w);
    if (wn < kSamePoint) return 0;
    const Vec3 u = (1.0 / wn) * w;
    const double arc = angle(a, b);
    // z(theta) = a.z cos(theta) + u.z sin(theta) = R cos(theta - phase)
    const double R = std::hypot(a.z, u.z);
    if (R <= std::abs(h.z0)) return 0;
    const double phase = std::atan2(u.z, a.z), d = std::acos(h.z0 / R);
    double th[2] = {phase - d, phase + d};
    int k = 0;
    for (double t0 : th) {
      t0 = std::fmod(t0 + 4 * M_PI, 2 * M_PI);
      if (t0 > kEndAngle && t0 < arc - kEndAngle) th[k++] = t0;
    }
    if (k == 2 && th[1] < th[0]) std::swap(th[0], th[1]);
    const double r = std::sqrt(std::max(0.0, 1.0 - h.z0 * h.z0));
    for (int i = 0; i < k; ++i) {
      const Vec3 x = std::cos(th[i]) * a + std::sin(th[i]) * u;
      const double rx = std::hypot(x.x, x.y);
      out[i] = rx > 0 ? Vec3{x.x * r / rx, x.y * r / rx, h.z0} : Vec3{r, 0, h.z0};
    }
    return k;
  }
  if (h.type == Edge::latitude) return 0;  // two circles of latitude never cross
  // A latitude arc against a great circle: r (nx cos l + ny sin l) + nz z0 = 0.
  const double z0 = a.z, r = std::hypot(a.x, a.y);
  const double m = std::hypot(h.n.x, h.n.y);
  if (r * m < 1e-300) return 0;
  const double c = -h.n.z * z0 / (r * m);
  if (std::abs(c) >= 1.0) return 0;
  const double la = lon_of(a), dl = dlon(a, b), ln = std::atan2(h.n.y, h.n.x), d = std::acos(c);
  double s[2] = {wrap_pi(ln - d - la), wrap_pi(ln + d - la)};
  int k = 0;
  for (double s0 : s) {
    const bool on = dl > 0 ? (s0 > kEndAngle && s0 < dl - kEndAngle) : (s0 < -kEndAngle && s0 > dl + kEndAngle);
    if (on) s[k++] = s0;
  }
  if (k == 2 && std::abs(s[1]) < std::abs(s[0])) std::swap(s[0], s[1]);
  for (int i = 0; i < k; ++i) out[i] = {r * std::cos(la + s[i]), r * std::sin(la + s[i]), z0};
  return k;
}

Vec3 midpoint(Vec3 a, Vec3 b, Edge t) {
  if (t == Edge::great_circle) return normalized(a + b);
  // On the circle of latitude: the bisector of the two projections (the arc is under pi).
  const double sx = a.x + b.x, sy = a.y + b.y, s = std::sqrt(sx * sx + sy * sy);
  const double r = std::sqrt(a.x * a.x + a.y * a.y);
  return s > 0 ? Vec3{sx * r / s, sy * r / s, a.z} : Vec3{-a.y, a.x, a.z};
}

// Drops repeated consecutive points (the edge leaving a dropped point's twin takes the dropped
// point's outgoing kind) and empties polygons that enclose nothing.
void drop_repeats(Polygon& p) {
  std::size_t n = p.size(), k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (k > 0 && same_point(p.v[k - 1], p.v[i])) {
      p.e[k - 1] = p.e[i];
      continue;
    }
    p.v[k] = p.v[i];
    p.e[k] = p.e[i];
    ++k;
  }
  while (k > 1 && same_point(p.v[k - 1], p.v[0])) --k;  // the last equals the first
  p.v.resize(k);
  p.e.resize(k);
  // Two points make a polygon only with a latitude edge: the lens between a circle of latitude
  // and a great circle through the same two points (a lon-lat cell against the bulge of a
  // great-circle edge whose corners lie on the cell's latitude).
  if (k < 2 || (k == 2 && p.e[0] == Edge::great_circle && p.e[1] == Edge::great_circle)) p.clear();
}

void clip_half(const Polygon& in, const HalfSpace& h, Polygon& out) {
  out.clear();
  const std::size_t n = in.size();
  Vec3 pts[4];
  for (std::size_t i = 0; i < n; ++i) {
    const Vec3 a = in.v[i], b = in.v[(i + 1) % n];
    const Edge t = in.e[i];
    pts[0] = a;
    const int k = crossings(a, b, t, h, pts + 1);
    pts[k + 1] = b;
    for (int j = 0; j <= k; ++j) {
      if (j == 0 && !h.inside(a)) continue;  // crossings lie on the boundary: always kept
      const bool along_subject = h.inside(midpoint(pts[j], pts[j + 1], t));
      out.v.push_back(pts[j]);
      out.e.push_back(along_subject ? t : h.type);
    }
  }
  drop_repeats(out);
}

}  // namespace

double norm(Vec3 a) { return std::sqrt(dot(a, a)); }

Vec3 normalized(Vec3 a) {
  const double n = norm(a);
  return n > 0 ? (1.0 / n) * a : a;
}

Vec3 unit_vector(double lon_deg, double lat_deg) {
  constexpr double kDeg2Rad = M_PI / 180.0;
  const double lo = lon_deg * kDeg2Rad, la = lat_deg * kDeg2Rad;
  return {std::cos(la) * std::cos(lo), std::cos(la) * std::sin(lo), std::sin(la)};
}

double angle(Vec3 a, Vec3 b) { return std::atan2(norm(cross(a, b)), dot(a, b)); }

Polygon cell_polygon(const double* lon_deg, const double* lat_deg, int n, bool latitude_edges) {
  Polygon p;
  for (int i = 0; i < n; ++i) {
    const int j = (i + 1) % n;
    p.v.push_back(unit_vector(lon_deg[i], lat_deg[i]));
    const bool lat = latitude_edges && lat_deg[i] == lat_deg[j] && std::abs(lat_deg[i]) < 90.0 &&
                     lon_deg[i] != lon_deg[j];
    p.e.push_back(lat ? Edge::latitude : Edge::great_circle);
  }
  // Corners of a latitude edge share one z exactly, which the latitude formulas rely on.
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p.e[i] == Edge::latitude) {
      Vec3& b = p.v[(i + 1) % p.size()];
      const double r = std::hypot(b.x, b.y), z = p.v[i].z, rz = std::sqrt(std::max(0.0, 1.0 - z * z));
      if (r > 0) b = {b.x * rz / r, b.y * rz / r, z};
    }
  drop_repeats(p);
  if (!p.v.empty() && signed_area(p) < 0) {
    const std::size_t m = p.size();
    Polygon q;
    for (std::size_t j = 0; j < m; ++j) {
      q.v.push_back(p.v[m - 1 - j]);
      q.e.push_back(p.e[(2 * m - 2 - j) % m]);
    }
    p = std::move(q);
  }
  return p;
}

double signed_area(const Polygon& p) {
  const std::size_t n = p.size();
  if (n < 2) return 0.0;
  Vec3 c{};
  for (const Vec3& v : p.v) c = c + v;
  c = norm(c) > 1e-3 ? normalized(c) : p.v[0];
  // The fan's triangles: 2 atan2(num_i, den_i) each. Their sum is 2 arg(prod(den_i + i num_i)),
  // one atan2 for all (the product is rescaled as it goes; its argument stays within (-pi, pi)
  // for a polygon smaller than a hemisphere).
  double re = 1.0, im = 0.0, lens = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const Vec3 a = p.v[i], b = p.v[(i + 1) % n];
    const double num = dot(c, cross(a - c, b - c));
    const double den = 1.0 + dot(c, a) + dot(a, b) + dot(b, c);
    const double r2 = re * den - im * num, i2 = re * num + im * den;
    const double scale = std::max(std::abs(r2), std::abs(i2));
    if (scale > 0) re = r2 / scale, im = i2 / scale;
    if (p.e[i] == Edge::latitude) lens += latitude_lens(a, b);
  }
  return 2.0 * std::atan2(im, re) + lens;
}

Vec3 moment(const Polygon& p) {
  const std::size_t n = p.size();
  Vec3 m{};
  for (std::size_t i = 0; i < n; ++i) {
    const Vec3 a = p.v[i], b = p.v[(i + 1) % n];
    if (p.e[i] == Edge::great_circle) {
      const Vec3 w = cross(a, b);
      const double s = norm(w);
      if (s > 0) m = m + (std::atan2(s, dot(a, b)) / s) * w;
    } else {
      const double z0 = a.z, r2 = a.x * a.x + a.y * a.y;
      const double dl = dlon(a, b);
      m = m + Vec3{-z0 * (b.y - a.y), z0 * (b.x - a.x), r2 * dl};
    }
  }
  return 0.5 * m;
}

Clipper::Clipper(const Polygon& clip) {
  const std::size_t n = clip.size();
  // Great-circle edges first: the lune or wedge they leave spans less than pi in longitude,
  // so the latitude arcs that the latitude edges then add run the short way, as edges do.
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < n; ++i) {
      const Edge t = clip.e[i];
      if ((pass == 0) != (t == Edge::great_circle)) continue;
      const Vec3 a = clip.v[i], b = clip.v[(i + 1) % n];
      HalfSpace h;
      h.type = t;
      if (t == Edge::great_circle) {
        const Vec3 w = cross(a, b);
        if (norm(w) < kSamePoint) continue;
        h.n = normalized(w);
      } else {
        h.z0 = a.z;
        h.sign = dlon(a, b) > 0 ? 1.0 : -1.0;
      }
      half_.push_back(h);
    }
}

void Clipper::clip(const Polygon& subject, Polygon& out) const {
  out = subject;
  for (const HalfSpace& h : half_) {
    if (out.v.empty()) return;
    // Nothing to do when every point is inside a great circle's half (its edges then are too).
    if (h.type == Edge::great_circle) {
      bool all_in = true;
      for (std::size_t i = 0; i < out.size() && all_in; ++i)
        all_in = h.f(out.v[i]) > kOnBoundary && out.e[i] == Edge::great_circle;
      if (all_in) continue;
    }
    clip_half(out, h, tmp_);
    std::swap(out, tmp_);
  }
}

Cap bounding_cap(const Polygon& p) {
  Cap cap;
  Vec3 c{};
  for (const Vec3& v : p.v) c = c + v;
  cap.centre = norm(c) > 1e-3 ? normalized(c) : (p.v.empty() ? Vec3{0, 0, 1} : p.v[0]);
  // The largest chord from the centre; a latitude arc bows away from its chord, so it is
  // sampled (rotating the first end's projection in 8 steps).
  double chord2 = 0;
  auto take = [&](Vec3 v) {
    const Vec3 d = v - cap.centre;
    chord2 = std::max(chord2, dot(d, d));
  };
  const std::size_t n = p.size();
  for (std::size_t i = 0; i < n; ++i) {
    take(p.v[i]);
    if (p.e[i] != Edge::latitude) continue;
    const Vec3 a = p.v[i], b = p.v[(i + 1) % n];
    const double step = dlon(a, b) / 8, cs = std::cos(step), sn = std::sin(step);
    Vec3 q = a;
    for (int k = 1; k < 8; ++k) {
      q = {q.x * cs - q.y * sn, q.x * sn + q.y * cs, a.z};
      take(q);
    }
  }
  const double r = 2 * std::asin(std::min(1.0, std::sqrt(chord2) / 2));
  cap.radius = r * (1.0 + 1e-6) + 1e-9;
  return cap;
}

}  // namespace estuary::sphere
