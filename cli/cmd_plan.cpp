#include <algorithm>
#include <iostream>
#include <unistd.h>

#include "cli/cli.h"
#include "io/config_io.h"
#include "planner/speculative.h"
#include "planner/support.h"
#include "reports/plan_report.h"

namespace kvplan::cli {

namespace {
//! "vLLM", or "vLLM 0.10" when a release was chosen with --engine vllm@0.10: the name
//! planner/support.h's table gives the engine (its canonical option name without one).
std::string engine_display_name(const ServingOptions& o) {
  const auto& table = engine_support_table();
  const auto it = std::find_if(table.begin(), table.end(), [&](const EngineSupport& e) { return e.engine == o.engine; });
  const std::string name(it != table.end() ? it->name : to_string(o.engine));
  return o.engine_version.empty() ? name : name + " " + o.engine_version;
}
}  // namespace

int cmd_plan(const Args& args) {
  po::options_description desc("kvplan plan: memory, FLOPs, capacity and latency (lists expand to rows)");
  desc.add_options()
      ("help,h", "this help")
      ("model", po::value<std::string>(), "catalog name(s) or file(s): HF config.json or YAML")
      ("gpu", po::value<std::string>(), "catalog name(s) or file(s)")
      ("context", po::value<std::string>()->default_value("2048"), "tokens per request (prompt + output)")
      ("batch", po::value<std::string>()->default_value("1"), "concurrent sequences for the decode step")
      ("shared-prefix-tokens", po::value<std::string>(),
       "capacity when every request starts with the same N tokens (a system prompt), held once by the prefix cache");
  add_serving_options(desc);
  add_output_options(desc);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n" << kListHelp;
    return 0;
  }
  if (!vm.count("model")) throw InputError("command line", "--model", "a model name or file (see `kvplan models`)", "nothing");
  if (!vm.count("gpu")) throw InputError("command line", "--gpu", "a GPU name or file (see `kvplan gpus`)", "nothing");
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");

  std::vector<ModelConfig> models;
  for (const auto& name : split_list(vm["model"].as<std::string>(), "--model")) models.push_back(io::load_model(name));
  for (const auto& m : models)
    if (!m.reading_note.empty()) std::cerr << "kvplan: note: " << m.source << ": " << m.reading_note << "\n";
  std::vector<GpuSpec> gpus;
  for (const auto& name : split_list(vm["gpu"].as<std::string>(), "--gpu")) gpus.push_back(io::load_gpu(name));
  refuse_duplicate_names(models, "--model");
  refuse_duplicate_names(gpus, "--gpu");
  std::vector<int64_t> contexts, batches;
  for (const auto& c : split_list(vm["context"].as<std::string>(), "--context")) contexts.push_back(parse_int_option(c, "--context"));
  for (const auto& b : split_list(vm["batch"].as<std::string>(), "--batch")) batches.push_back(parse_int_option(b, "--batch"));
  const auto options = expand_serving_options(vm);
  const bool shared_prefix_given = vm.count("shared-prefix-tokens") > 0;
  const int64_t shared_prefix =
      shared_prefix_given ? parse_int_option(vm["shared-prefix-tokens"].as<std::string>(), "--shared-prefix-tokens") : 0;

  std::vector<reports::PlanRow> rows;
  for (const auto& m : models)
    for (const auto& g : gpus)
      for (const auto& o : options) {
        validate(m, o, "command line");
        for (int64_t ctx : contexts) {
          check_context(m, o, ctx, "command line");
          for (int64_t b : batches) {
            if (o.max_num_seqs_given && b > o.max_num_seqs)
              throw InputError("command line", "--batch",
                               "at most --max-num-seqs (" + std::to_string(o.max_num_seqs) +
                                   "): the engine never runs more sequences at once",
                               std::to_string(b));
            // `auto` resolves to the model's 16-bit dtype here: its scheme variants are one row.
            const ServingOptions o1 = without_kv_scheme(o, o.kv_dtype(m));
            if (std::any_of(rows.begin(), rows.end(), [&](const reports::PlanRow& r) {
                  return r.model == m.name && r.gpu == g.name && r.plan.context_tokens == ctx && r.plan.batch == b &&
                         same_options(r.requested, o1);
                }))
              continue;
            Plan p = make_plan(m, g, o1, ctx, b);
            const ServingOptions used = with_engine_defaults(g, o1);
            if (shared_prefix_given) p.shared_prefix = shared_prefix_capacity(m, used, p.capacity, ctx, shared_prefix);
            const ModelConfig planned = apply_what_if(m, used);
            // An engine that cannot allocate this cache would log nothing about it.
            std::string what_if = what_if_reason(m, used).value_or("");
            rows.push_back({m.name, g.name, used, p,
                            what_if.empty() ? engine_startup_lines(planned, g, used, p.memory, p.capacity) : "",
                            std::move(what_if), o1, planned.num_kv_heads, engine_display_name(used), std::nullopt, std::nullopt});
            if (used.spec) rows.back().spec = make_spec_plan(planned, g, used, p);
            if (used.lora) rows.back().lora = make_lora_plan(planned, g, used, p);
          }
        }
      }

  std::string text;
  switch (format) {
    case Format::json: text = reports::plan_json(rows).dump(2) + "\n"; break;
    case Format::md: text = reports::render(reports::plan_table(rows, true), reports::TextFormat::md); break;
    case Format::csv: text = reports::render(reports::plan_table_raw(rows), reports::TextFormat::csv); break;
    case Format::table: text = reports::plan_text(rows); break;
  }
  emit(vm, text);
  return 0;
}

}  // namespace kvplan::cli
