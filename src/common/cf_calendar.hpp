// The CF calendars (standard, gregorian, proleptic_gregorian, julian, noleap, 365_day, all_leap,
// 366_day, 360_day): their names, month lengths and day numbers, and dates written
// "YYYY-MM-DD[ hh:mm:ss]". One place for what the I/O layer's period boundaries and file names
// and the coupler's time axes both need.
#pragma once

#include <cstdint>
#include <string>

namespace estuary::detail {

bool is_cf_calendar(const std::string& name);
// "standard, gregorian, ...": for messages.
const char* cf_calendar_names();

int month_days(std::int64_t year, int month, const std::string& calendar);
// Days from 0000-01-01 to year-month-day in the calendar (year 0 exists and follows its rule).
std::int64_t day_number(std::int64_t year, int month, int day, const std::string& calendar);

struct CfDate {
  long year = 0;
  int month = 1, day = 1, hour = 0, minute = 0;
  double second = 0;
  std::string text() const;  // "YYYY-MM-DD hh:mm:ss"
};
// "YYYY-MM-DD" or "YYYY-MM-DD hh:mm:ss" (or with a T), a day that exists in `calendar`.
// Throws estuary::Error naming `where` otherwise.
CfDate parse_cf_date(const std::string& text, const std::string& calendar, const std::string& where);

// Now, UTC, as "YYYY-MM-DDThh:mm:ssZ": the date of a file's CF `history` line.
std::string utc_timestamp();

}  // namespace estuary::detail
