#include "common/cf_calendar.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

#include "estuary/error.hpp"

namespace estuary::detail {

namespace {

using i64 = std::int64_t;

bool is_leap(i64 y, const std::string& cal) {
  if (cal == "noleap" || cal == "365_day") return false;
  if (cal == "all_leap" || cal == "366_day") return true;
  if (cal == "julian") return y % 4 == 0;
  // standard, gregorian, proleptic_gregorian: the Gregorian rule (dates before 1582-10-15 are
  // taken as proleptic Gregorian; model runs start later than that).
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

i64 floor_div(i64 a, i64 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

bool is_cf_calendar(const std::string& name) {
  static const std::set<std::string> cf = {"standard", "gregorian", "proleptic_gregorian", "noleap", "365_day",
                                           "all_leap", "366_day",   "360_day",             "julian"};
  return cf.count(name) > 0;
}

const char* cf_calendar_names() {
  return "standard, gregorian, proleptic_gregorian, julian, noleap, 365_day, all_leap, 366_day, 360_day";
}

int month_days(i64 y, int m, const std::string& cal) {
  if (cal == "360_day") return 30;
  static const int n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y, cal) ? 29 : n[m - 1];
}

i64 day_number(i64 y, int m, int d, const std::string& cal) {
  if (cal == "360_day") return 360 * y + 30 * (m - 1) + (d - 1);
  i64 n = 365 * y;
  if (cal == "all_leap" || cal == "366_day") n += y;
  else if (cal == "julian") n += floor_div(y + 3, 4);
  else if (cal != "noleap" && cal != "365_day") n += floor_div(y + 3, 4) - floor_div(y + 99, 100) + floor_div(y + 399, 400);
  for (int k = 1; k < m; ++k) n += month_days(y, k, cal);
  return n + (d - 1);
}

std::string CfDate::text() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04ld-%02d-%02d %02d:%02d:%02.0f", year, month, day, hour, minute, second);
  return buf;
}

CfDate parse_cf_date(const std::string& text, const std::string& calendar, const std::string& where) {
  CfDate d;
  char tail = 0;
  const int got = std::sscanf(text.c_str(), "%ld-%d-%d%*[ T]%d:%d:%lf %c", &d.year, &d.month, &d.day, &d.hour,
                              &d.minute, &d.second, &tail);
  const bool time_ok = got < 4 || (got >= 6 && d.hour >= 0 && d.hour < 24 && d.minute >= 0 && d.minute < 60 &&
                                   d.second >= 0 && d.second < 60);
  if (got < 3 || got == 7 || d.year < 0 || d.month < 1 || d.month > 12 || d.day < 1 || !time_ok ||
      d.day > month_days(d.year, d.month, calendar))
    throw Error("bad date '" + text + "' (calendar " + calendar + ")", where,
                "write it as YYYY-MM-DD or YYYY-MM-DD hh:mm:ss, a day of that calendar");
  if (got < 6) d.hour = d.minute = 0, d.second = 0;
  return d;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace estuary::detail
