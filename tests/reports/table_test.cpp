// reports/table.h: table rendering (aligned text, Markdown, CSV) and the number
// formatters every human-readable figure goes through. Expected strings worked by hand.
#include <doctest/doctest.h>

#include "reports/table.h"

using namespace kvplan;
using reports::TextFormat;

namespace {
reports::Table two_by_two() {
  reports::Table t;
  t.header = {"name", "n"};
  t.right_align = {false, true};
  t.rows = {{"a", "1"}, {"bbb", "22"}};
  return t;
}
}  // namespace

TEST_CASE("text tables pad each column to its widest cell, numbers right-aligned, no trailing blanks") {
  // Column widths: "name"/"bbb" -> 4, "n"/"22" -> 2; two blanks between columns; the
  // rule is 4 + 2 + 2 = 8 dashes.
  CHECK(reports::render(two_by_two(), TextFormat::table) ==
        "name   n\n"
        "--------\n"
        "a      1\n"
        "bbb   22\n");
}

TEST_CASE("Markdown tables mark right-aligned columns with a colon") {
  CHECK(reports::render(two_by_two(), TextFormat::md) ==
        "| name |  n |\n"
        "|------|---:|\n"
        "| a    |  1 |\n"
        "| bbb  | 22 |\n");
}

TEST_CASE("CSV quotes fields with commas, quotes or newlines and doubles the quotes (RFC 4180)") {
  reports::Table t;
  t.header = {"a", "b"};
  t.rows = {{"x,y", "say \"hi\""}};
  CHECK(reports::render(t, TextFormat::csv) == "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
}

TEST_CASE("a multi-byte character takes one column") {
  reports::Table t;
  t.header = {"x"};
  t.rows = {{"×2"}, {"abc"}};
  // "×2" is 3 bytes but 2 columns: padded with one blank to "abc"'s 3 (none trailing).
  CHECK(reports::render(t, TextFormat::md) == "| x   |\n|-----|\n| ×2  |\n| abc |\n");
}

TEST_CASE("sizes: GB is 1e9 bytes, GiB 2^30, binary units that read best") {
  CHECK(reports::gb(80'000'000'000) == "80.00 GB");
  CHECK(reports::gb(137'953'296'384, 1) == "138.0 GB");          // 137.95 rounds up
  CHECK(reports::gib(85'899'345'920) == "80.00 GiB");             // 80 x 2^30
  CHECK(reports::gib(85'029'158'912) == "79.19 GiB");             // H100 as CUDA reports it: 79.189...
  CHECK(reports::bytes_binary(512) == "512 B");
  CHECK(reports::bytes_binary(131'072) == "128.0 KiB");           // 2^17 / 2^10
  CHECK(reports::bytes_binary(1'572'864) == "1.50 MiB");          // 1.5 x 2^20
  CHECK(reports::bytes_binary(3'435'973'837) == "3.20 GiB");      // 3.2 x 2^30, rounded
  CHECK(to_gb(3.35e12) == doctest::Approx(3350.0));
  CHECK(to_gib(1073741824.0) == 1.0);
}

TEST_CASE("FLOPs, seconds and counts") {
  CHECK(reports::flops(1.234e12) == "1.23 TFLOP");
  CHECK(reports::flops(4.56e15) == "4.56 PFLOP");
  CHECK(reports::flops(999) == "999 FLOP");
  CHECK(reports::seconds(812e-6) == "812 us");
  CHECK(reports::seconds(0.0123) == "12.3 ms");
  CHECK(reports::seconds(4.56) == "4.56 s");
  CHECK(reports::seconds(0.9996) == "1 s");    // 999.6 ms would round to "1e+03 ms"
  CHECK(reports::seconds(2610) == "2610 s");
  CHECK(reports::count(1'234'567) == "1,234,567");
  CHECK(reports::count(-1000) == "-1,000");
  CHECK(reports::count(999) == "999");
}

TEST_CASE("the units legend is stated once, in planner/units.h") {
  CHECK(std::string(kSizeUnitsLegend) == "GB = 1e9 bytes, GiB = 2^30 bytes");
}
