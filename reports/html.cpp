#include "reports/html.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <functional>

namespace kvplan::reports::html {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string palette(size_t i) {
  // Okabe & Ito (2008) colour-blind-safe set, yellow replaced by a darker gold to read on white.
  static const std::array<const char*, 8> kColors = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                     "#E69F00", "#56B4E9", "#8C6D1F", "#444444"};
  return kColors[i % kColors.size()];
}

std::vector<double> nice_ticks(double lo, double hi, int n) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, n);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  std::vector<double> out;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return out;
}

std::string tick_label(double v) {
  const double a = std::abs(v);
  const auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
  };
  if (a >= 1e6) return trim(fmt::format("{:.2f}", v / 1e6)) + "M";
  if (a >= 1e3) return trim(fmt::format("{:.2f}", v / 1e3)) + "k";
  if (a >= 10 || a == 0) return trim(fmt::format("{:.1f}", v));
  if (a >= 0.1) return trim(fmt::format("{:.2f}", v));
  return trim(fmt::format("{:.3f}", v));
}

namespace {

struct Frame {
  double left = 70, right = 20, top = 40, bottom = 56;
  double w = 0, h = 0;  // plot area
};

struct Scale {
  double lo = 0, hi = 1;
  bool log2 = false;
  double map(double v, double p0, double p1) const {
    const double a = log2 ? std::log2(std::max(v, 1e-300)) : v;
    const double l = log2 ? std::log2(lo) : lo, h = log2 ? std::log2(hi) : hi;
    return p0 + (a - l) / (h - l) * (p1 - p0);
  }
};

Scale make_scale(const Axis& ax, double data_lo, double data_hi) {
  Scale s;
  s.log2 = ax.log2;
  if (ax.log2) {
    s.lo = ax.min.value_or(std::exp2(std::floor(std::log2(std::max(data_lo, 1e-9)))));
    s.hi = ax.max.value_or(std::exp2(std::ceil(std::log2(std::max(data_hi, s.lo * 2)))));
    if (!(s.hi > s.lo)) s.hi = s.lo * 2;
    return s;
  }
  s.lo = ax.min.value_or(std::min(0.0, data_lo));
  double hi = ax.max.value_or(data_hi > s.lo ? data_hi * 1.05 : s.lo + 1);
  const auto ticks = nice_ticks(s.lo, hi);
  if (!ax.max && !ticks.empty() && ticks.back() < hi) hi = ticks.back() + (ticks.size() > 1 ? ticks[1] - ticks[0] : 1);
  else if (!ax.max && !ticks.empty()) hi = ticks.back();
  s.hi = hi > s.lo ? hi : s.lo + 1;
  return s;
}

std::vector<double> ticks_for(const Scale& s) {
  if (!s.log2) return nice_ticks(s.lo, s.hi);
  std::vector<double> t;
  const int k0 = static_cast<int>(std::ceil(std::log2(s.lo) - 1e-9));
  const int k1 = static_cast<int>(std::floor(std::log2(s.hi) + 1e-9));
  const int stride = std::max(1, (k1 - k0) / 8 + ((k1 - k0) % 8 ? 1 : 0));
  for (int k = k0; k <= k1; k += stride) t.push_back(std::exp2(k));
  return t;
}

std::string text(double x, double y, const std::string& s, const char* anchor = "middle", int size = 12,
                 const char* extra = "") {
  return fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="{}" font-size="{}"{}>{}</text>)", x, y, anchor, size,
                     extra, escape(s));
}

}  // namespace

std::optional<double> upper_fence(std::vector<double> values) {
  if (values.size() < 4) return std::nullopt;
  std::sort(values.begin(), values.end());
  const auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const auto i = static_cast<size_t>(std::floor(pos));
    const double frac = pos - static_cast<double>(i);
    return i + 1 < values.size() ? values[i] + frac * (values[i + 1] - values[i]) : values[i];
  };
  const double q1 = quantile(0.25), q3 = quantile(0.75);
  const double fence = q3 + 1.5 * (q3 - q1);
  if (!(values.back() > fence)) return std::nullopt;
  return fence;
}

std::string line_chart(const Chart& c) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  for (const auto& r : c.refs) ylo = std::min(ylo, r.y), yhi = std::max(yhi, r.y);
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1;
  if (!std::isfinite(ylo)) ylo = 0, yhi = 1;

  // Legend to the right of the plot; one line per series.
  const double legend_w = c.series.empty() ? 0 : 230;
  Frame f;
  f.right = 20 + legend_w;
  f.w = c.width - f.left - f.right;
  f.h = c.height - f.top - f.bottom;
  const Scale sx = make_scale(c.x, xlo, xhi), sy = make_scale(c.y, ylo, yhi);
  const auto X = [&](double v) { return sx.map(v, f.left, f.left + f.w); };
  const auto Y = [&](double v) { return sy.map(v, f.top + f.h, f.top); };

  std::string o = fmt::format(
      R"(<svg class="chart" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="{}" font-family="sans-serif">)",
      c.width, c.height + (c.note.empty() ? 0 : 18), c.width, c.height + (c.note.empty() ? 0 : 18), escape(c.title));
  o += fmt::format(R"(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)", c.width, c.height);
  o += text(f.left + f.w / 2, 22, c.title, "middle", 14, R"( font-weight="bold")");
  // Grid and ticks.
  // Powers of two read best in binary thousands: 512, 1k, 2k, ... (1k = 1024).
  const auto xlabel = [&](double t) {
    return sx.log2 && t >= 1024 ? tick_label(t / 1024).append("k") : tick_label(t);
  };
  for (const double t : ticks_for(sx)) {
    const double x = X(t);
    o += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#e3e3e3"/>)", x, f.top, f.top + f.h);
    o += text(x, f.top + f.h + 16, xlabel(t));
  }
  for (const double t : ticks_for(sy)) {
    const double y = Y(t);
    o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#e3e3e3"/>)", f.left, y, f.left + f.w, y);
    o += text(f.left - 6, y + 4, tick_label(t), "end");
  }
  o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#888"/>)", f.left, f.top,
                   f.w, f.h);
  o += text(f.left + f.w / 2, f.top + f.h + 40, c.x.label);
  o += fmt::format(R"~(<text x="16" y="{:.1f}" text-anchor="middle" font-size="12" transform="rotate(-90 16 {:.1f})">{}</text>)~",
                   f.top + f.h / 2, f.top + f.h / 2, escape(c.y.label));
  // Reference lines.
  for (const auto& r : c.refs) {
    const double y = Y(r.y);
    o += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#C00000" stroke-dasharray="6 4"/>)", f.left,
                     y, f.left + f.w, y);
    o += text(f.left + f.w - 4, y - 5, r.label, "end", 11, R"( fill="#C00000")");
  }
  // Series, clipped to the plot area.
  const std::string clip = fmt::format("clip{:x}", std::hash<std::string>{}(c.title));
  o += fmt::format(R"(<clipPath id="{}"><rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/></clipPath>)", clip,
                   f.left - 6, f.top - 6, f.w + 12, f.h + 12);
  o += fmt::format(R"~(<g clip-path="url(#{})">)~", clip);
  for (const auto& s : c.series) {
    std::string pts;
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    if (s.line && !pts.empty())
      o += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"/>)", pts, s.color,
                       s.highlight ? 3 : 1.8);
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto [x, y] = s.points[i];
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const bool open = i < s.hollow.size() && s.hollow[i];
      o += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}" stroke="{}" stroke-width="1.5"/>)", X(x), Y(y),
                       s.highlight ? 5.5 : 3.5, open ? "#ffffff" : s.color, s.color);
    }
  }
  o += "</g>";
  // Legend.
  double ly = f.top + 6;
  for (const auto& s : c.series) {
    const double lx = f.left + f.w + 14;
    o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)", lx, ly, s.color);
    std::string label = s.label.size() > 36 ? s.label.substr(0, 35) + "…" : s.label;
    o += text(lx + 17, ly + 10, label, "start", 11, s.highlight ? R"( font-weight="bold")" : "");
    ly += 17;
  }
  if (!c.note.empty()) o += text(f.left, c.height + 12, c.note, "start", 11, R"( fill="#555")");
  o += "</svg>";
  return o;
}

std::string stacked_bars(const StackedBars& b) {
  const double bar_h = 20, gap = 8, top = 40, label_w = 250, right = 24;
  const double legend_h = 44;
  const double plot_w = b.width - label_w - right;
  const double height = top + static_cast<double>(b.bars.size()) * (bar_h + gap) + 40 + legend_h;
  double max_total = 0;
  for (const auto& row : b.values) {
    double t = 0;
    for (const double v : row) t += std::max(0.0, v);
    max_total = std::max(max_total, t);
  }
  const auto ticks = nice_ticks(0, max_total > 0 ? max_total : 1);
  const double hi = ticks.empty() ? 1 : std::max(ticks.back(), max_total);
  const auto X = [&](double v) { return label_w + v / hi * plot_w; };

  std::string o = fmt::format(
      R"(<svg class="chart" width="{0}" height="{1:.0f}" viewBox="0 0 {0} {1:.0f}" role="img" aria-label="{2}" font-family="sans-serif">)",
      b.width, height, escape(b.title));
  o += fmt::format(R"(<rect x="0" y="0" width="{}" height="{:.0f}" fill="#ffffff"/>)", b.width, height);
  o += text(b.width / 2.0, 22, b.title, "middle", 14, R"( font-weight="bold")");
  const double plot_bottom = top + static_cast<double>(b.bars.size()) * (bar_h + gap);
  for (const double t : ticks) {
    o += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#e3e3e3"/>)", X(t), top - 4, plot_bottom);
    o += text(X(t), plot_bottom + 14, tick_label(t));
  }
  o += text(label_w + plot_w / 2, plot_bottom + 32, b.unit);
  for (size_t i = 0; i < b.bars.size(); ++i) {
    const double y = top + static_cast<double>(i) * (bar_h + gap);
    o += text(label_w - 8, y + 14, b.bars[i], "end", 11);
    double acc = 0;
    const auto& row = i < b.values.size() ? b.values[i] : std::vector<double>{};
    for (size_t s = 0; s < row.size(); ++s) {
      const double v = std::max(0.0, row[s]);
      if (v <= 0) continue;
      o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>{}: {:.2f}</title></rect>)",
                       X(acc), y, X(acc + v) - X(acc), bar_h, s < b.colors.size() ? b.colors[s] : palette(s),
                       escape(s < b.segments.size() ? b.segments[s] : ""), v);
      acc += v;
    }
  }
  // Legend in rows that wrap at the right edge (~6.5 px per character at 11 px).
  double lx = 20, ly = plot_bottom + 44;
  for (size_t s = 0; s < b.segments.size(); ++s) {
    const double item_w = 26 + 6.5 * static_cast<double>(b.segments[s].size());
    if (lx + item_w > b.width - 10 && lx > 20) lx = 20, ly += 18;
    o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)", lx, ly,
                     s < b.colors.size() ? b.colors[s] : palette(s));
    o += text(lx + 16, ly + 10, b.segments[s], "start", 11);
    lx += item_w;
  }
  o += "</svg>";
  return o;
}

std::string tornado(const Tornado& t) {
  const double bar_h = 20, gap = 10, top = 40, label_w = 230, right = 30;
  const double plot_w = t.width - label_w - right;
  const double plot_bottom = top + static_cast<double>(t.bars.size()) * (bar_h + gap);
  const double height = plot_bottom + 44;
  double lo = t.base, hi = t.base;
  for (const auto& b : t.bars) lo = std::min({lo, b.low, b.high}), hi = std::max({hi, b.low, b.high});
  // The axis spans the outcomes with a margin for the settings' labels, not from zero:
  // the differences are what the chart is for.
  const double pad = std::max((hi - lo) * 0.25, std::abs(t.base) * 0.01 + 1e-9);
  const auto ticks = nice_ticks(lo - pad, hi + pad);
  const double a = std::min(lo - pad, ticks.empty() ? lo - pad : ticks.front());
  const double z = std::max(hi + pad, ticks.empty() ? hi + pad : ticks.back());
  const auto X = [&](double v) { return label_w + (v - a) / (z - a) * plot_w; };
  std::string o = fmt::format(
      R"(<svg class="chart" width="{0}" height="{1:.0f}" viewBox="0 0 {0} {1:.0f}" role="img" aria-label="{2}" font-family="sans-serif">)",
      t.width, height, escape(t.title));
  o += fmt::format(R"(<rect x="0" y="0" width="{}" height="{:.0f}" fill="#ffffff"/>)", t.width, height);
  o += text(t.width / 2.0, 22, t.title, "middle", 14, R"( font-weight="bold")");
  for (const double v : ticks) {
    if (v < a || v > z) continue;
    o += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#e3e3e3"/>)", X(v), top - 4,
                     plot_bottom);
    o += text(X(v), plot_bottom + 14, tick_label(v));
  }
  o += text(label_w + plot_w / 2, plot_bottom + 32, t.unit);
  for (size_t i = 0; i < t.bars.size(); ++i) {
    const auto& b = t.bars[i];
    const double y = top + static_cast<double>(i) * (bar_h + gap);
    o += text(label_w - 8, y + 14, b.label, "end", 11);
    const auto segment = [&](double from, double to, const std::string& color, const std::string& setting) {
      if (from == to) return;
      const double x0 = X(std::min(from, to)), x1 = X(std::max(from, to));
      o += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>{}: {}</title></rect>)",
                       x0, y, std::max(1.0, x1 - x0), bar_h, color, escape(setting), tick_label(to));
      const bool left = to < from;
      o += text(left ? x0 - 4 : x1 + 4, y + 14, setting, left ? "end" : "start", 10);
    };
    segment(t.base, b.low, palette(0), b.low_label);
    segment(t.base, b.high, palette(1), b.high_label);
  }
  o += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#222" stroke-width="1.5"/>)",
                   X(t.base), top - 8, plot_bottom);
  o += "</svg>";
  return o;
}

}  // namespace kvplan::reports::html
