// kvplan reports: HTML and inline-SVG building blocks for self-contained pages (no
// scripts, no fonts, no network): escaping, line/scatter charts with axes, ticks, units
// and legends, and horizontal stacked bars.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvplan::reports::html {

//! Escapes & < > " ' for text and attribute values.
std::string escape(std::string_view s);
//! A categorical colour (8 distinct, colour-blind-friendly Okabe-Ito order), cycling.
std::string palette(size_t i);

struct Axis {
  std::string label;                 //!< with its unit: "context (tokens)"
  bool log2 = false;                 //!< powers of two (ticks 512, 1k, 2k, ...)
  std::optional<double> min, max;    //!< default: from the data (linear axes start at 0)
};

struct Series {
  std::string label;
  std::string color;
  std::vector<std::pair<double, double>> points;  //!< (x, y), drawn in order
  bool line = true;                   //!< false: markers only (scatter)
  bool highlight = false;             //!< larger markers, bold line
  std::vector<bool> hollow;           //!< per point: open marker (e.g. misses the SLO)
};

//! A horizontal reference line (e.g. an SLO target), dashed, labelled at the right.
struct RefLine {
  std::string label;
  double y = 0;
};

struct Chart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  std::vector<RefLine> refs;
  int width = 640, height = 380;
  std::string note;                   //!< small print under the plot
};

//! An <svg> element: frame, gridlines, tick labels, axis labels, series, legend.
std::string line_chart(const Chart& c);

//! Where an axis should end so that one far outlier does not flatten every other point:
//! Tukey's upper fence Q3 + 1.5 (Q3 - Q1) (quartiles interpolated between the sorted
//! values, as numpy's default), when some value lies beyond it; nullopt when none does,
//! or with fewer than four values (no quartiles worth the name).
std::optional<double> upper_fence(std::vector<double> values);

struct StackedBars {
  std::string title;
  std::string unit;                           //!< axis label, e.g. "GB per GPU (1e9 B)"
  std::vector<std::string> segments;          //!< legend, in stacking order
  std::vector<std::string> colors;            //!< one per segment
  std::vector<std::string> bars;              //!< one label per bar
  std::vector<std::vector<double>> values;    //!< [bar][segment], >= 0
  int width = 640;
};

//! An <svg> element: one horizontal bar per row, segments stacked left to right.
std::string stacked_bars(const StackedBars& b);

//! A tornado chart: one horizontal bar per factor from its low to its high outcome, around
//! a base value drawn as a vertical line; bars in the given order (largest swing first).
struct Tornado {
  std::string title;
  std::string unit;                           //!< axis label
  double base = 0;
  struct Bar {
    std::string label, low_label, high_label;  //!< the factor; its two settings
    double low = 0, high = 0;
  };
  std::vector<Bar> bars;
  int width = 760;
};
std::string tornado(const Tornado& t);

//! Tick positions for a linear axis over [lo, hi]: 1, 2 or 5 x 10^k steps, ~`n` ticks.
std::vector<double> nice_ticks(double lo, double hi, int n = 5);
//! "0.5", "12", "1.5k", "2M": short tick labels.
std::string tick_label(double v);

}  // namespace kvplan::reports::html
