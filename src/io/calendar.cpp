// Dates in the CF calendars, for the names of split files (XIOS names them after the period).
#include <cmath>
#include <cstdio>

#include "estuary/io.hpp"

namespace estuary::io {

namespace {

bool is_leap(long y, const std::string& cal) {
  if (cal == "noleap" || cal == "365_day") return false;
  if (cal == "all_leap" || cal == "366_day") return true;
  if (cal == "julian") return y % 4 == 0;
  // standard, gregorian, proleptic_gregorian: the Gregorian rule (dates before 1582-10-15 are
  // taken as proleptic Gregorian; model runs start later than that).
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int month_days(long y, int m, const std::string& cal) {
  if (cal == "360_day") return 30;
  static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y, cal) ? 29 : n[m - 1];
}

}  // namespace

std::string date_label(double seconds, const std::string& reference_time, const std::string& calendar,
                       double step_s) {
  long y = 0;
  int mo = 1, d = 1, h = 0, mi = 0;
  double s = 0;
  int got = std::sscanf(reference_time.c_str(), "%ld-%d-%d%*[ T]%d:%d:%lf", &y, &mo, &d, &h, &mi, &s);
  if (got < 3 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo, calendar))
    throw Error("bad reference_time '" + reference_time + "'", "output.reference_time",
                "write it as YYYY-MM-DD or YYYY-MM-DD hh:mm:ss");
  if (got < 6) { h = 0; mi = 0; s = 0; }
  double total = h * 3600.0 + mi * 60.0 + s + seconds;
  long days = static_cast<long>(std::floor(total / 86400.0));
  double sod = total - static_cast<double>(days) * 86400.0;
  if (sod >= 86400.0 - 1e-6) { days += 1; sod = 0; }
  if (sod < 1e-6) sod = 0;
  // Move whole days: forwards month by month, backwards likewise.
  days += d - 1;
  d = 1;
  while (days < 0) {
    if (--mo == 0) { mo = 12; --y; }
    days += month_days(y, mo, calendar);
  }
  while (days >= month_days(y, mo, calendar)) {
    days -= month_days(y, mo, calendar);
    if (++mo == 13) { mo = 1; ++y; }
  }
  d = static_cast<int>(days) + 1;
  const long isod = std::lround(sod);
  char buf[64];
  const bool whole_days = std::fmod(step_s, 86400.0) == 0 && h == 0 && mi == 0 && s == 0;
  const bool whole_minutes = std::fmod(step_s, 60.0) == 0 && s == 0;
  if (whole_days)
    std::snprintf(buf, sizeof buf, "%04ld%02d%02d", y, mo, d);
  else if (whole_minutes)
    std::snprintf(buf, sizeof buf, "%04ld%02d%02d%02ld%02ld", y, mo, d, isod / 3600, isod / 60 % 60);
  else
    std::snprintf(buf, sizeof buf, "%04ld%02d%02d%02ld%02ld%02ld", y, mo, d, isod / 3600, isod / 60 % 60,
                  isod % 60);
  return buf;
}

}  // namespace estuary::io
