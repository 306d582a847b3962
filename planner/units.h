// Sizes as text, in the units every kvplan figure uses: GB = 1e9 bytes (decimal, as GPU
// and DRAM vendors quote memory), GiB = 2^30 bytes (binary, as CUDA and engines log it).
// The one home of this formatting: the planner's messages and reports/ both use it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace kvplan {

inline constexpr double kBytesPerGB = 1e9;

//! Decimal gigabytes with `decimals` digits after the point: gb(80e9) = "80.00 GB",
//! gb(137953296384, 1) = "138.0 GB". Rounded to nearest from the exact double.
inline std::string gb(int64_t bytes, int decimals = 2) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f GB", decimals, static_cast<double>(bytes) / kBytesPerGB);
  return buf;
}

}  // namespace kvplan
