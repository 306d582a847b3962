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
  reports::Table t;
  t.header = {"name", "type", "layers", "hidden", "heads", "kv heads", "attention", "params (computed)",
              "published", "KV/token (16-bit)"};
  t.right_align = {false, false, true, true, true, true, false, true, true, true};
  for (const auto& name : io::catalog("models")) {
    const ModelConfig m = io::load_model(name);
    std::string attn = m.is_mla() ? "MLA" : m.num_kv_heads == m.num_heads ? "MHA" : m.num_kv_heads == 1 ? "MQA" : "GQA";
    if (!m.layer_window.empty()) attn += "+sliding";
    if (m.is_moe()) attn += fmt::format(", MoE {}/{}", m.experts_per_token, m.num_experts);
    ServingOptions o;
    o.kv_cache_dtype = DType::fp16;
    t.rows.push_back({m.name, m.model_type, std::to_string(m.num_layers), std::to_string(m.hidden_size),
                      std::to_string(m.num_heads), m.is_mla() ? "-" : std::to_string(m.num_kv_heads), attn,
                      fmt::format("{:.2f} B", static_cast<double>(count_params(m).total()) / 1e9),
                      m.published_params ? fmt::format("{:.2f} B", static_cast<double>(*m.published_params) / 1e9) : "-",
                      reports::bytes_binary(kv_bytes_per_token(m, o))});
  }
  const auto f = text_format(vm);
  emit(vm, reports::render(t, f) + (f == reports::TextFormat::csv ? "" : "B = 1e9 parameters\n"));
  return 0;
}

int cmd_gpus(const Args& args) {
  const auto vm = catalog_options(args, "kvplan gpus: the GPU catalog (configs/gpus)");
  reports::Table t;
  t.header = {"name", "memory (CUDA)", "memory", "bandwidth", "bf16 dense", "fp8 dense", "interconnect", "price"};
  t.right_align = {false, true, true, true, true, true, true, true};
  for (const auto& name : io::catalog("gpus")) {
    const GpuSpec g = io::load_gpu(name);
    t.rows.push_back({g.name, reports::gib(g.memory_bytes), reports::gb(g.memory_bytes),
                      fmt::format("{:.0f} GB/s", g.memory_bandwidth_bytes_per_s / 1e9),
                      fmt::format("{:.1f} TFLOP/s", g.peak_flops.bf16 / 1e12),
                      g.peak_flops.fp8 > 0 ? fmt::format("{:.1f} TFLOP/s", g.peak_flops.fp8 / 1e12) : "-",
                      fmt::format("{:.0f} GB/s", g.interconnect_bytes_per_s / 1e9),
                      g.price_per_hour_usd ? fmt::format("${:.2f}/h", *g.price_per_hour_usd) : "-"});
  }
  const auto f = text_format(vm);
  emit(vm, reports::render(t, f) + (f == reports::TextFormat::csv ? "" : "GB = 1e9 bytes, GiB = 2^30 bytes; memory as CUDA reports it\n"));
  return 0;
}

}  // namespace kvplan::cli
