// Dates in the CF calendars: the names of split files (XIOS names them after the period), and the
// boundaries of periods given in calendar months or years (output_freq: 1mo, 3mo, 1y).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/cf_calendar.hpp"
#include "estuary/io.hpp"

namespace estuary::io {

namespace {

using i64 = std::int64_t;
using detail::day_number;
using detail::month_days;

i64 floor_div(i64 a, i64 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

CalendarClock::CalendarClock(const std::string& calendar, const std::string& reference_time)
    : calendar_(calendar) {
  const detail::CfDate d = detail::parse_cf_date(reference_time, calendar, "output.reference_time");
  y_ = d.year, mo_ = d.month, d_ = d.day, h_ = d.hour, mi_ = d.minute, s_ = d.second;
}

double CalendarClock::months_after(i64 months) const {
  // The reference's day of month and time of day, `months` later (day clamped to the month's
  // length: 31 January + 1 month is 28 or 29 February). Whole days from the reference, so the
  // time of day cancels.
  const i64 m0 = 12 * y_ + (mo_ - 1) + months;
  const i64 y = floor_div(m0, 12);
  const int m = static_cast<int>(m0 - 12 * y) + 1;
  const int d = std::min(d_, month_days(y, m, calendar_));
  return 86400.0 * static_cast<double>(day_number(y, m, d, calendar_) - day_number(y_, mo_, d_, calendar_));
}

double CalendarClock::boundary(const Frequency& f, i64 k) const {
  return f.months > 0 ? months_after(k * f.months) : static_cast<double>(k) * f.seconds;
}

i64 CalendarClock::first_boundary_from(const Frequency& f, double t) const {
  if (f.months == 0) return static_cast<i64>(std::ceil(t / f.seconds - 1e-9));
  // A month is 28 to 31 days: start below and step up (a few steps).
  const double eps = 1e-9 * 86400.0 * 28.0 * f.months;
  i64 k = static_cast<i64>(std::floor(t / (86400.0 * 31.0 * f.months))) - 1;
  while (boundary(f, k) < t - eps) ++k;
  while (boundary(f, k - 1) >= t - eps) --k;
  return k;
}

std::string date_label(double seconds, const std::string& reference_time, const std::string& calendar,
                       double step_s) {
  const detail::CfDate ref = detail::parse_cf_date(reference_time, calendar, "output.reference_time");
  long y = ref.year;
  int mo = ref.month, d = ref.day;
  const int h = ref.hour, mi = ref.minute;
  const double s = ref.second;
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
