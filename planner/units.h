// Sizes as text, in the units every kvplan figure uses: GB = 1e9 bytes (decimal, as GPU
// and DRAM vendors quote memory), GiB = 2^30 bytes (binary, as CUDA and engines log it).
// The one home of these units and of the legend that states them: the planner's
// messages, the search's and reports/ all use it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace kvplan {

inline constexpr double kBytesPerGB = 1e9;
inline constexpr double kBytesPerGiB = 1073741824.0;  // 2^30

//! The units legend every output with sizes prints (its own sentence follows it).
inline constexpr const char* kSizeUnitsLegend = "GB = 1e9 bytes, GiB = 2^30 bytes";

//! Decimal gigabytes as a number: bytes (or bytes per second) / 1e9.
inline constexpr double to_gb(double bytes) { return bytes / kBytesPerGB; }
//! Binary gibibytes as a number: bytes / 2^30.
inline constexpr double to_gib(double bytes) { return bytes / kBytesPerGiB; }

//! A number as a user writes it on a command line (%g): 64, 2.5, 1e-06.
inline std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

//! Decimal gigabytes with `decimals` digits after the point: gb(80e9) = "80.00 GB",
//! gb(137953296384, 1) = "138.0 GB". Rounded to nearest from the exact double.
inline std::string gb(int64_t bytes, int decimals = 2) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f GB", decimals, to_gb(static_cast<double>(bytes)));
  return buf;
}

}  // namespace kvplan
