#include "reports/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "planner/planner.h"

namespace kvplan::reports {

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Display width in columns: UTF-8 continuation bytes take none.
size_t width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(const std::string& s, size_t w, bool right) {
  const size_t n = width(s);
  const std::string fill(n < w ? w - n : 0, ' ');
  return right ? fill + s : s + fill;
}
}  // namespace

std::string render(const Table& t, TextFormat f) {
  std::string out;
  const size_t cols = t.header.size();
  const auto right = [&](size_t c) { return c < t.right_align.size() && t.right_align[c]; };
  if (f == TextFormat::csv) {
    const auto line = [&](const std::vector<std::string>& r) {
      for (size_t c = 0; c < r.size(); ++c) {
        // Appended in two steps: `"," + std::string&&` trips GCC 12's false -Wrestrict at -O3.
        if (c) out += ',';
        out += csv_field(r[c]);
      }
      out += "\n";
    };
    line(t.header);
    for (const auto& r : t.rows) line(r);
    return out;
  }
  std::vector<size_t> w(cols, 0);
  for (size_t c = 0; c < cols; ++c) {
    w[c] = width(t.header[c]);
    for (const auto& r : t.rows) w[c] = std::max(w[c], c < r.size() ? width(r[c]) : 0);
  }
  const auto line = [&](const std::vector<std::string>& r) {
    if (f == TextFormat::md) out += "| ";
    for (size_t c = 0; c < cols; ++c) {
      const std::string cell = c < r.size() ? r[c] : "";
      out += pad(cell, w[c], right(c));
      if (c + 1 < cols) out += f == TextFormat::md ? " | " : "  ";
    }
    if (f == TextFormat::md) {
      out += " |\n";
    } else {
      out.erase(out.find_last_not_of(' ') + 1);  // no trailing blanks after the last column
      out += "\n";
    }
  };
  line(t.header);
  if (f == TextFormat::md) {
    out += "|";
    for (size_t c = 0; c < cols; ++c) out += std::string(w[c] + 1, '-') + (right(c) ? ":|" : "-|");
    out += "\n";
  } else {
    size_t total = 0;
    for (size_t c = 0; c < cols; ++c) total += w[c] + (c + 1 < cols ? 2 : 0);
    out += std::string(total, '-') + "\n";
  }
  for (const auto& r : t.rows) line(r);
  return out;
}

std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", to_gib(static_cast<double>(bytes))); }

std::string bytes_binary(int64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (std::llabs(bytes) < 1024) return fmt::format("{} B", bytes);
  if (b < 1048576.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < kBytesPerGiB) return fmt::format("{:.2f} MiB", b / 1048576.0);
  return fmt::format("{:.2f} GiB", to_gib(b));
}

std::string flops(double f) {
  static const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP"};
  int i = 0;
  while (std::fabs(f) >= 1000 && i < 7) {
    f /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}", f, units[i]);
}

std::string seconds(double s) {
  if (!std::isfinite(s)) return "inf s";
  // Each unit up to where three significant digits would round to 1000 of it: 999.6 ms
  // reads "1 s", not "1e+03 ms", and an overloaded run's 2,610 s "2610 s".
  if (s < 0.9995e-3) return fmt::format("{:.0f} us", s * 1e6);
  if (s < 0.9995) return fmt::format("{:.3g} ms", s * 1e3);
  if (s < 999.5) return fmt::format("{:.3g} s", s);
  return fmt::format("{:.0f} s", s);
}

std::string count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string percent(double fraction) { return fmt::format("{:.1f} %", 100 * fraction); }

std::string number(double x) {
  if (std::isfinite(x) && std::abs(x) >= 1000 && std::abs(x) < 1e6) return count(std::llround(x));
  return fmt::format("{:.3g}", x);
}

std::string raw_number(double x) { return fmt::format("{:.9g}", x); }

std::string calibration_label(const Calibration& c, const std::string& gpu, const CeilingTransfer& bw,
                              const CeilingTransfer& gemm) {
  if (c.file.empty() && !c.measured) return "none: datasheet roofline (80 % bandwidth, 70 %/50 % of peak FLOP/s)";
  std::string s = fmt::format("{} ({})", c.file.empty() ? std::string("measured") : c.file, c.device);
  if (!c.gpu.empty() && c.gpu != gpu)
    s += fmt::format("; fitted on {}, on {} its efficiencies and host overheads, {}, all-reduce scaled to the link", c.gpu,
                     gpu,
                     bw.measured ? fmt::format("memory-bound ones x {:.3f} by measured memory bandwidth", bw.factor)
                                 : "memory-bound ones at the datasheet fraction (memory bandwidth not measured on both GPUs)");
  if (!c.gpu.empty() && c.gpu != gpu && gemm.measured)
    s += fmt::format("; GEMM FLOP efficiency x {:.3f} by measured GEMM FLOP/s", gemm.factor);
  return s;
}

}  // namespace kvplan::reports
