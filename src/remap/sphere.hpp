// Polygons on the unit sphere whose edges are great-circle arcs or arcs of latitude circles,
// and the three things conservative remapping needs of them: exact areas, exact first moments
// (the integral of the position vector, for second-order weights) and the intersection of a
// polygon with a convex one.
//
// An edge of latitude runs the short way round (|delta lon| < pi) at the latitude of its two
// ends. Polygons are counter-clockwise seen from outside the sphere (interior on the left).
#pragma once

#include <cstdint>
#include <vector>

namespace estuary::sphere {

struct Vec3 {
  double x = 0, y = 0, z = 0;
};

inline Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline Vec3 operator*(double s, Vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
inline double dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
double norm(Vec3 a);
Vec3 normalized(Vec3 a);
// Degrees to the unit vector.
Vec3 unit_vector(double lon_deg, double lat_deg);
// Angle between two unit vectors, accurate for small and large angles.
double angle(Vec3 a, Vec3 b);

enum class Edge : std::uint8_t { great_circle, latitude };

struct Polygon {
  std::vector<Vec3> v;
  std::vector<Edge> e;  // e[i]: the edge from v[i] to v[i+1 mod n]
  std::size_t size() const { return v.size(); }
  void clear() {
    v.clear();
    e.clear();
  }
};

// A grid cell from its corners (degrees). With `latitude_edges`, an edge between two corners
// of equal latitude (not at a pole) follows that circle of latitude. Repeated corners are
// dropped and the result is made counter-clockwise; corners that enclose nothing give an empty
// polygon.
Polygon cell_polygon(const double* lon_deg, const double* lat_deg, int n, bool latitude_edges);

// Signed area (positive for counter-clockwise), exact for both edge kinds up to rounding.
double signed_area(const Polygon& p);
// The integral of the position vector over the polygon, (1/2) * closed integral of x cross dx:
// its direction is the centroid, and it is exact for both edge kinds.
Vec3 moment(const Polygon& p);

// A point within this of a half-space's boundary is on it (and counts as inside), so shared
// edges of the two grids clip cleanly.
inline constexpr double kOnBoundary = 1e-13;

// A half-space bounded by one edge of a convex polygon: left of a great circle (n.x >= 0) or
// north (sign +1) / south (sign -1) of a circle of latitude.
struct HalfSpace {
  Edge type = Edge::great_circle;
  Vec3 n;
  double z0 = 0, sign = 1;
  double f(Vec3 x) const { return type == Edge::great_circle ? dot(n, x) : sign * (x.z - z0); }
  bool inside(Vec3 x) const { return f(x) >= -kOnBoundary; }
};

// The part of a polygon inside a convex one (Sutherland-Hodgman, one half-space per edge of
// the convex polygon: the hemisphere left of a great-circle edge, the cap or its complement
// beyond a latitude edge), which holds exactly when it is convex and within a hemisphere.
// Edges of the subject may cross an edge of the clip twice (a latitude arc and a great
// circle): both crossings are found. Set up once per convex polygon, used for many subjects.
class Clipper {
 public:
  explicit Clipper(const Polygon& convex);
  // `out` is overwritten.
  void clip(const Polygon& subject, Polygon& out) const;

 private:
  std::vector<HalfSpace> half_;
  mutable Polygon tmp_;
};

// A cap holding the polygon: centre and angular radius (latitude arcs included).
struct Cap {
  Vec3 centre;
  double radius = 0;
};
Cap bounding_cap(const Polygon& p);

}  // namespace estuary::sphere
