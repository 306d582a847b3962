// kvplan reports: plain tables rendered as aligned text, Markdown or CSV, and the unit
// formatting every human-readable number goes through (planner/units.h: kSizeUnitsLegend).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/types.h"
#include "planner/units.h"

namespace kvplan {
struct CeilingTransfer;  // planner/planner.h
}  // namespace kvplan

namespace kvplan::reports {

enum class TextFormat { table, md, csv };

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right_align;  // per column; numbers right-aligned in text and Markdown
};

//! Renders a table; CSV quotes fields containing commas or quotes (RFC 4180).
std::string render(const Table& t, TextFormat f);

//! "80.00 GB" (decimal, 1e9): the planner's kvplan::gb (planner/units.h).
using kvplan::gb;
//! "74.51 GiB" (binary, 2^30).
std::string gib(int64_t bytes);
//! Bytes with the binary unit that reads best: "512 B", "128.0 KiB", "1.50 MiB", "3.20 GiB".
std::string bytes_binary(int64_t bytes);
//! "1.23 TFLOP", "4.56 PFLOP": an amount of work.
std::string flops(double f);
//! "812 us", "12.3 ms", "4.56 s".
std::string seconds(double s);
//! Integers with thousands separators: 1,234,567.
std::string count(int64_t n);
//! A fraction as a percentage with one decimal: 0.123 -> "12.3 %".
std::string percent(double fraction);
//! Three significant digits, with thousands separators from 1,000 to a million (rounded
//! to a whole number there): 0.0123 -> "0.0123", 12345.6 -> "12,346", 2.5e6 -> "2.5e+06".
std::string number(double x);
//! A double for machines (CSV): nine significant digits, "3.35e+12".
std::string raw_number(double x);
//! Which time model a result used, for a run on catalog GPU `gpu`: the calibration file
//! and the device it was measured on, and what carried over when that is another GPU.
std::string calibration_label(const Calibration& c, const std::string& gpu, const CeilingTransfer& bw,
                              const CeilingTransfer& gemm);

}  // namespace kvplan::reports
