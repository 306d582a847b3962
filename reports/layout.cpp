// The layout diagram (reports/layout.h). Pools are columns left to right after the
// router; instances stack down their column; a disaggregated layout draws the KV link
// as an arrow from the prefill column to the decode column.
#include "reports/layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "reports/html.h"
#include "reports/size_common.h"

namespace kvplan::reports {

namespace {

constexpr int kGpu = 26, kGpuGap = 4, kPad = 8, kHeader = 18, kInstanceGap = 10;
constexpr int kColumnGap = 90, kRouterW = 110, kTop = 44, kLeft = 10;

std::string role_name(PoolRole r) {
  switch (r) {
    case PoolRole::prefill: return "prefill";
    case PoolRole::decode: return "decode";
    case PoolRole::replicas: break;
  }
  return "replica";
}

std::string fill_of(PoolRole r) {
  switch (r) {
    case PoolRole::prefill: return "#fdf0e2";
    case PoolRole::decode: return "#e6f0fa";
    case PoolRole::replicas: break;
  }
  return "#eef6ee";
}

// One row per pipeline stage: its dp TP groups side by side.
int64_t stage_gpus(const LayoutPool& p) { return p.tp * p.dp; }
int64_t gpus_drawn(const LayoutPool& p) { return std::min(stage_gpus(p), kMaxGpusDrawn); }
int64_t rows_drawn(const LayoutPool& p) { return std::min<int64_t>(p.pp, 4); }
int instance_w(const LayoutPool& p) {
  return std::max(150, 2 * kPad + static_cast<int>(gpus_drawn(p)) * (kGpu + kGpuGap) + 40);
}
int instance_h(const LayoutPool& p) {
  return kHeader + 2 * kPad + static_cast<int>(rows_drawn(p)) * (kGpu + kGpuGap);
}
int64_t instances_drawn(const LayoutPool& p) { return std::clamp<int64_t>(p.instances, 1, kMaxInstancesDrawn); }
int column_h(const LayoutPool& p) {
  const auto n = static_cast<int>(instances_drawn(p));
  return n * instance_h(p) + (n - 1) * kInstanceGap + (p.instances > kMaxInstancesDrawn ? 22 : 0);
}

std::string text(int x, int y, const std::string& s, const char* extra = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\"{}>{}</text>", x, y, extra, html::escape(s));
}

std::string arrow(int x1, int y1, int x2, int y2, const char* color) {
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.5\" "
                     "marker-end=\"url(#kvplan-arrow)\"/>",
                     x1, y1, x2, y2, color);
}

//! One pool's column at x: its title, its instances (each a box of GPU squares) and
//! the y of each drawn instance's middle, for the arrows.
std::string column(const LayoutPool& p, int x, int y0, std::vector<int>& mids) {
  std::string s;
  const int64_t gpus = stage_gpus(p) * p.pp;
  s += text(x, y0 - 22,
            fmt::format("{} {}{} ({} GPU{} each: TP {}{}{})", p.instances,
                        p.role == PoolRole::replicas ? "replica" : role_name(p.role) + " instance", p.instances == 1 ? "" : "s",
                        gpus, gpus == 1 ? "" : "s", p.tp, p.dp > 1 ? fmt::format(" x DP {}", p.dp) : "",
                        p.pp > 1 ? fmt::format(" x PP {}", p.pp) : ""),
            " font-weight=\"600\"");
  if (!p.detail.empty()) s += text(x, y0 - 8, p.gpu + ": " + p.detail, " fill=\"#555\"");
  const int w = instance_w(p), h = instance_h(p);
  for (int64_t i = 0; i < instances_drawn(p); ++i) {
    const int y = y0 + static_cast<int>(i) * (h + kInstanceGap);
    mids.push_back(y + h / 2);
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"{}\" stroke=\"#777\"/>", x, y, w,
                     h, fill_of(p.role));
    s += text(x + kPad, y + 13, fmt::format("{} {} · {}", role_name(p.role), i + 1, p.gpu));
    for (int64_t r = 0; r < rows_drawn(p); ++r) {
      const int gy = y + kHeader + kPad + static_cast<int>(r) * (kGpu + kGpuGap);
      // Each TP group (GPUs that all-reduce every layer) framed on its own; a stage holds dp of them.
      for (int64_t g0 = 0; g0 < gpus_drawn(p); g0 += p.tp) {
        const int64_t in_frame = std::min(p.tp, gpus_drawn(p) - g0);
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"none\" stroke=\"#999\" "
                         "stroke-dasharray=\"3,2\"/>",
                         x + kPad - 2 + static_cast<int>(g0) * (kGpu + kGpuGap), gy - 2,
                         static_cast<int>(in_frame) * (kGpu + kGpuGap) + 2, kGpu + 4);
      }
      for (int64_t g = 0; g < gpus_drawn(p); ++g)
        s += fmt::format("<rect class=\"gpu\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"#4a7fb5\"/>",
                         x + kPad + static_cast<int>(g) * (kGpu + kGpuGap), gy, kGpu, kGpu);
      if (stage_gpus(p) > kMaxGpusDrawn)
        s += text(x + kPad + static_cast<int>(gpus_drawn(p)) * (kGpu + kGpuGap) + 2, gy + 17,
                  fmt::format("+{}", stage_gpus(p) - kMaxGpusDrawn));
    }
  }
  if (p.instances > kMaxInstancesDrawn)
    s += text(x, y0 + column_h(p) - 6, fmt::format("… and {} more alike", p.instances - kMaxInstancesDrawn),
              " fill=\"#555\"");
  return s;
}

}  // namespace

Layout layout_of(const size::Deployment& o) {
  Layout l;
  const auto& so = o.candidate.options;
  l.title = fmt::format("{}: {} x {}", o.model, o.gpus_total, o.gpu);
  l.router = o.replicas > 1 ? "router" : "clients";
  LayoutPool p;
  p.gpu = o.gpu;
  p.instances = std::max<int64_t>(1, o.replicas);
  p.tp = so.tp;
  p.dp = so.dp;
  p.pp = so.pp;
  p.detail = fmt::format("{} weights, KV {}", size_detail::weight_label(o), size_detail::kv_label(o));
  l.pools.push_back(p);
  return l;
}

Layout layout_of(const size::DisaggOption& o) {
  Layout l;
  const int64_t units = std::max<int64_t>(1, o.units);
  l.title = fmt::format("{}: {} x {} ({} GPUs)", o.model, units, size::to_string(o.ratio), o.gpus_total);
  l.router = "router";
  const auto pool = [&](PoolRole role, const std::string& gpu, const ServingOptions& so, int64_t per_unit) {
    LayoutPool p;
    p.role = role;
    p.gpu = gpu;
    p.instances = units * per_unit;
    p.tp = so.tp;
    p.dp = so.dp;
    p.pp = so.pp;
    return p;
  };
  l.pools.push_back(pool(PoolRole::prefill, o.prefill_gpu, o.prefill_options, o.ratio.prefill));
  l.pools.push_back(pool(PoolRole::decode, o.decode_gpu, o.decode_options, o.ratio.decode));
  l.kv_link = o.link;
  return l;
}

std::string layout_svg(const Layout& l) {
  int height = 0;
  for (const auto& p : l.pools) height = std::max(height, column_h(p));
  height += kTop + 30;
  int width = kLeft + kRouterW + kColumnGap;
  for (const auto& p : l.pools) width += instance_w(p) + kColumnGap;
  width += 40;
  const bool disaggregated =
      std::any_of(l.pools.begin(), l.pools.end(), [](const LayoutPool& p) { return p.role != PoolRole::replicas; });
  std::string s = fmt::format(
      "<svg class=\"layout\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\">",
      width, height, width, height, html::escape(l.title));
  s += "<defs><marker id=\"kvplan-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
       "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/></marker></defs>";
  s += text(kLeft, 14, l.title, " font-weight=\"600\" font-size=\"13\"");
  const int router_y = kTop + (height - kTop - 30) / 2 - 18;
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"36\" rx=\"18\" fill=\"#f3f3f3\" stroke=\"#555\"/>",
                   kLeft, router_y, kRouterW);
  s += text(kLeft + 12, router_y + 22, l.router);
  int x = kLeft + kRouterW + kColumnGap;
  std::vector<int> prev_mids;
  int prev_right = 0;
  for (size_t k = 0; k < l.pools.size(); ++k) {
    const LayoutPool& p = l.pools[k];
    std::vector<int> mids;
    s += column(p, x, kTop, mids);
    if (p.role != PoolRole::decode || !disaggregated || k == 0) {
      // Requests enter here from the router.
      for (const int m : mids) s += arrow(kLeft + kRouterW, router_y + 18, x - 2, m, "#444");
    } else if (!prev_mids.empty()) {
      // The KV cache of each prefilled request crosses to a decode instance.
      const int from = prev_mids.front(), to = mids.front();
      s += arrow(prev_right + 2, from, x - 2, to, "#c2571a");
      s += text(prev_right + 8, std::min(from, to) - 6, "KV transfer", " fill=\"#c2571a\"");
      if (!l.kv_link.empty()) s += text(prev_right + 8, std::max(from, to) + 16, l.kv_link, " fill=\"#c2571a\"");
    }
    prev_mids = mids;
    prev_right = x + instance_w(p);
    x += instance_w(p) + kColumnGap;
  }
  s += "</svg>";
  return s;
}

}  // namespace kvplan::reports
