// `kvplan models` and `kvplan gpus`: the catalogs, rendered by reports/catalog_report.h.
#include "cli/cli.h"
#include "io/config_io.h"
#include "planner/planner.h"
#include "reports/catalog_report.h"

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
  std::vector<reports::CatalogModel> models;
  ServingOptions sixteen_bit;
  sixteen_bit.kv_cache_dtype = DType::fp16;
  for (const auto& name : io::catalog("models")) {
    ModelConfig m = io::load_model(name);
    const int64_t params = count_params(m).total();
    const int64_t kv = kv_bytes_per_token(m, sixteen_bit);
    models.push_back({std::move(m), params, kv});
  }
  emit(vm, reports::models_text(models, f));
  return 0;
}

int cmd_gpus(const Args& args) {
  const auto vm = catalog_options(args, "kvplan gpus: the GPU catalog (configs/gpus)");
  const auto f = text_format(vm);
  std::vector<GpuSpec> gpus;
  for (const auto& name : io::catalog("gpus")) gpus.push_back(io::load_gpu(name));
  emit(vm, reports::gpus_text(gpus, f));
  return 0;
}

}  // namespace kvplan::cli
