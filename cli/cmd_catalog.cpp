#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "io/config_io.h"
#include "planner/planner.h"
#include "reports/table.h"

namespace kvplan::cli {

namespace {
reports::TextFormat text_format(const po::variables_map& vm) {
  switch (parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table")) {
    case Format::md: return reports::TextFormat::md;
    case Format::csv: return reports::TextFormat::csv;
    case Format::json: throw InputError("command line", "--format", "table, md or csv for the catalogs", "'json'");
    case Format::table: break;
  }
  return reports::TextFormat::table;
}

po::variables_map catalog_options(const Args& args, const char* title) {
  po::options_description desc(title);
  desc.add_options()("help,h", "this help");
  add_output_options(desc);
  return parse(args, desc);
}
}  // namespace

int cmd_models(const Args& args) {
  const auto vm = catalog_options(args, "kvplan models: the model catalog (configs/models)");
  const auto f = text_format(vm);
  const bool raw = f == reports::TextFormat::csv;  // CSV is for machines: plain numbers, units in the header
  reports::Table t;
  t.header = raw ? std::vector<std::string>{"name", "type", "layers", "hidden_size", "heads", "kv_heads", "attention",
                                            "params_computed", "params_published", "kv_bytes_per_token_16bit",
                                            "experts", "experts_per_token"}
                 : std::vector<std::string>{"name", "type", "layers", "hidden", "heads", "kv heads", "attention",
                                            "params (computed)", "published", "KV/token (16-bit)"};
  t.right_align = {false, false, true, true, true, true, false, true, true, true};
  for (const auto& name : io::catalog("models")) {
    const ModelConfig m = io::load_model(name);
    std::string attn = m.is_mla() ? "MLA" : m.num_kv_heads == m.num_heads ? "MHA" : m.num_kv_heads == 1 ? "MQA" : "GQA";
    if (!m.layer_window.empty()) attn += "+sliding";
    if (m.is_moe() && !raw) attn += fmt::format(", MoE {}/{}", m.experts_per_token, m.num_experts);
    ServingOptions o;
    o.kv_cache_dtype = DType::fp16;
    const int64_t params = count_params(m).total();
    const int64_t kv = kv_bytes_per_token(m, o);
    t.rows.push_back({m.name, m.model_type, std::to_string(m.num_layers), std::to_string(m.hidden_size),
                      std::to_string(m.num_heads), m.is_mla() ? (raw ? "" : "-") : std::to_string(m.num_kv_heads), attn,
                      raw ? std::to_string(params) : fmt::format("{:.2f} B", static_cast<double>(params) / 1e9),
                      m.published_params ? (raw ? std::to_string(*m.published_params)
                                                : fmt::format("{:.2f} B", static_cast<double>(*m.published_params) / 1e9))
                                         : (raw ? "" : "-"),
                      raw ? std::to_string(kv) : reports::bytes_binary(kv)});
    if (raw) {
      t.rows.back().push_back(m.is_moe() ? std::to_string(m.num_experts) : "");
      t.rows.back().push_back(m.is_moe() ? std::to_string(m.experts_per_token) : "");
    }
  }
  emit(vm, reports::render(t, f) + (raw ? "" : "B = 1e9 parameters\n"));
  return 0;
}

int cmd_gpus(const Args& args) {
  const auto vm = catalog_options(args, "kvplan gpus: the GPU catalog (configs/gpus)");
  const auto f = text_format(vm);
  const bool raw = f == reports::TextFormat::csv;  // CSV is for machines: plain numbers, units in the header
  reports::Table t;
  t.header = raw ? std::vector<std::string>{"name", "memory_bytes", "bandwidth_bytes_per_s", "bf16_dense_flops_per_s",
                                            "fp8_dense_flops_per_s", "interconnect_bytes_per_s", "price_per_hour_usd"}
                 : std::vector<std::string>{"name", "memory (CUDA)", "memory", "bandwidth", "bf16 dense", "fp8 dense",
                                            "interconnect", "price"};
  t.right_align = {false, true, true, true, true, true, true, true};
  const auto x = [](double v) { return fmt::format("{:.9g}", v); };
  for (const auto& name : io::catalog("gpus")) {
    const GpuSpec g = io::load_gpu(name);
    if (raw) {
      t.rows.push_back({g.name, std::to_string(g.memory_bytes), x(g.memory_bandwidth_bytes_per_s), x(g.peak_flops.bf16),
                        g.peak_flops.fp8 > 0 ? x(g.peak_flops.fp8) : "", x(g.interconnect_bytes_per_s),
                        g.price_per_hour_usd ? x(*g.price_per_hour_usd) : ""});
      continue;
    }
    t.rows.push_back({g.name, reports::gib(g.memory_bytes), reports::gb(g.memory_bytes),
                      fmt::format("{:.0f} GB/s", g.memory_bandwidth_bytes_per_s / 1e9),
                      fmt::format("{:.1f} TFLOP/s", g.peak_flops.bf16 / 1e12),
                      g.peak_flops.fp8 > 0 ? fmt::format("{:.1f} TFLOP/s", g.peak_flops.fp8 / 1e12) : "-",
                      fmt::format("{:.0f} GB/s", g.interconnect_bytes_per_s / 1e9),
                      g.price_per_hour_usd ? fmt::format("${:.2f}/h", *g.price_per_hour_usd) : "-"});
  }
  emit(vm, reports::render(t, f) + (raw ? "" : "GB = 1e9 bytes, GiB = 2^30 bytes; memory as CUDA reports it\n"));
  return 0;
}

}  // namespace kvplan::cli
