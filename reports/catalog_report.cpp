#include "reports/catalog_report.h"

#include <fmt/format.h>

namespace kvplan::reports {

namespace {

//! The attention kind as the listing names it: MLA, MHA (a KV head per query head), MQA
//! (one KV head) or GQA, "+sliding" with windowed layers; for a hybrid, in how many of the
//! layers, beside its Mamba and linear-attention layers (their state is per request, not
//! per token: the KV column counts the attention layers only); the experts of an MoE for
//! a reader.
std::string attention(const ModelConfig& m, bool raw) {
  std::string attn = m.is_mla() ? "MLA" : m.num_kv_heads == m.num_heads ? "MHA" : m.num_kv_heads == 1 ? "MQA" : "GQA";
  if (!m.layer_window.empty()) attn += "+sliding";
  if (m.has_state_layers()) {
    int64_t attention_layers = 0, mamba1 = 0, mamba2 = 0, linear = 0, conv = 0, cross = 0;
    for (int64_t l = 0; l < m.num_layers; ++l) {
      switch (m.mixer(l)) {
        case Mixer::attention: ++attention_layers; break;
        case Mixer::mamba1: ++mamba1; break;
        case Mixer::mamba2: ++mamba2; break;
        case Mixer::linear_attention: ++linear; break;
        case Mixer::short_conv: ++conv; break;
        case Mixer::cross_attention: ++cross; break;
        case Mixer::none: break;
      }
    }
    // CSV keeps numbers out of its text columns: the kinds only.
    if (raw) {
      attn += std::string(mamba1 > 0 ? "+Mamba" : "") + (mamba2 > 0 ? "+Mamba-2" : "") + (linear > 0 ? "+linear attention" : "") +
              (conv > 0 ? "+short conv" : "") + (cross > 0 ? "+cross-attention" : "");
    } else {
      attn += fmt::format(" in {} of {} layers", attention_layers, m.num_layers);
      if (mamba1 > 0) attn += fmt::format(" + Mamba in {}", mamba1);
      if (mamba2 > 0) attn += fmt::format(" + Mamba-2 in {}", mamba2);
      if (linear > 0) attn += fmt::format(" + linear attention in {}", linear);
      if (conv > 0) attn += fmt::format(" + short conv in {}", conv);
      if (cross > 0) attn += fmt::format(" + cross-attention in {}", cross);
    }
  }
  if (m.is_moe() && !raw) attn += fmt::format(", MoE {}/{}", m.experts_per_token, m.num_experts);
  return attn;
}

std::string gb_per_s(double bytes_per_s) { return fmt::format("{:.0f} GB/s", to_gb(bytes_per_s)); }
std::string tflop_per_s(double flop_per_s) { return fmt::format("{:.1f} TFLOP/s", flop_per_s / 1e12); }

}  // namespace

std::string billions(int64_t n) { return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9); }

std::string models_text(const std::vector<CatalogModel>& models, TextFormat f) {
  const bool raw = f == TextFormat::csv;  // CSV is for machines: plain numbers, units in the header
  Table t;
  t.header = raw ? std::vector<std::string>{"name", "type", "layers", "hidden_size", "heads", "kv_heads", "attention",
                                            "params_computed", "params_published", "kv_bytes_per_token_16bit",
                                            "experts", "experts_per_token"}
                 : std::vector<std::string>{"name", "type", "layers", "hidden", "heads", "kv heads", "attention",
                                            "params (computed)", "published", "KV/token (16-bit)"};
  t.right_align = {false, false, true, true, true, true, false, true, true, true};
  for (const CatalogModel& c : models) {
    const ModelConfig& m = c.model;
    const std::string none = raw ? "" : "-";
    t.rows.push_back({m.name, m.model_type, std::to_string(m.num_layers), std::to_string(m.hidden_size),
                      std::to_string(m.num_heads), m.is_mla() ? none : std::to_string(m.num_kv_heads), attention(m, raw),
                      raw ? std::to_string(c.params) : billions(c.params),
                      m.published_params ? (raw ? std::to_string(*m.published_params) : billions(*m.published_params))
                                         : none,
                      raw ? std::to_string(c.kv_bytes_per_token_16bit) : bytes_binary(c.kv_bytes_per_token_16bit)});
    if (raw) {
      t.rows.back().push_back(m.is_moe() ? std::to_string(m.num_experts) : "");
      t.rows.back().push_back(m.is_moe() ? std::to_string(m.experts_per_token) : "");
    }
  }
  return render(t, f) + (raw ? "" : "B = 1e9 parameters\n");
}

std::string gpus_text(const std::vector<GpuSpec>& gpus, TextFormat f) {
  const bool raw = f == TextFormat::csv;  // CSV is for machines: plain numbers, units in the header
  Table t;
  t.header = raw ? std::vector<std::string>{"name", "memory_bytes", "bandwidth_bytes_per_s", "bf16_dense_flops_per_s",
                                            "fp8_dense_flops_per_s", "interconnect_bytes_per_s", "price_per_hour_usd"}
                 : std::vector<std::string>{"name", "memory (CUDA)", "memory", "bandwidth", "bf16 dense", "fp8 dense",
                                            "interconnect", "price"};
  t.right_align = {false, true, true, true, true, true, true, true};
  for (const GpuSpec& g : gpus) {
    if (raw) {
      t.rows.push_back({g.name, std::to_string(g.memory_bytes), raw_number(g.memory_bandwidth_bytes_per_s),
                        raw_number(g.peak_flops.bf16), g.peak_flops.fp8 > 0 ? raw_number(g.peak_flops.fp8) : "",
                        raw_number(g.interconnect_bytes_per_s),
                        g.price_per_hour_usd ? raw_number(*g.price_per_hour_usd) : ""});
      continue;
    }
    t.rows.push_back({g.name, gib(g.memory_bytes), gb(g.memory_bytes), gb_per_s(g.memory_bandwidth_bytes_per_s),
                      tflop_per_s(g.peak_flops.bf16), g.peak_flops.fp8 > 0 ? tflop_per_s(g.peak_flops.fp8) : "-",
                      gb_per_s(g.interconnect_bytes_per_s),
                      g.price_per_hour_usd ? fmt::format("${:.2f}/h", *g.price_per_hour_usd) : "-"});
  }
  return render(t, f) + (raw ? "" : std::string(kSizeUnitsLegend) + "; memory as CUDA reports it\n");
}

}  // namespace kvplan::reports
