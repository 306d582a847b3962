#include "io/hardware_io.h"

#include <system_error>

#include "io/config_io.h"
#include "io/yaml_util.h"
#include "planner/types.h"

namespace kvplan::io {

ServerSpec parse_server(const std::string& text, const std::string& file) {
  const YAML::Node n = parse_yaml_mapping(text, file);
  ServerSpec s;
  s.file = file;
  s.gpu = req_str(n, "gpu", file);
  s.form = req_str(n, "server_form", file);
  // A GPU, a server or power of zero would make every cost or power figure silently
  // wrong, so each must be positive; idle power may be 0 only when it truly is.
  s.gpu_price_usd = req_num(n, "gpu_price_usd", file, 1e-9);
  s.gpu_board_power_w = req_num(n, "gpu_board_power_w", file, 1e-9);
  s.gpu_idle_power_w = req_num(n, "gpu_idle_power_w", file, 0, s.gpu_board_power_w);
  // Bounds far above any real server (an NVL72 rack is 72 GPUs on one fabric, a rack
  // 42-52U) keep the layout arithmetic far from int64 overflow.
  s.gpus_per_server = req_int(n, "gpus_per_server", file, 1);
  if (s.gpus_per_server > 1024)
    throw InputError(file, "gpus_per_server", "at most 1024 GPUs", std::to_string(s.gpus_per_server));
  s.whole_server = opt_bool(n, "whole_server", file).value_or(false);
  s.server_price_usd = req_num(n, "server_price_usd", file, 0);
  s.server_power_w = req_num(n, "server_power_w", file, 0);
  s.server_rack_units = req_int(n, "server_rack_units", file, 1);
  if (s.server_rack_units > 64)
    throw InputError(file, "server_rack_units", "at most 64 (U)", std::to_string(s.server_rack_units));
  s.tp_across_servers = opt_bool(n, "tp_across_servers", file).value_or(false);
  return s;
}

ServerSpec load_server(const std::string& name_or_path) {
  const auto path = resolve("servers", name_or_path);
  return parse_server(read_file(path), path.string());
}

std::optional<ServerSpec> find_server(const std::string& gpu_name) {
  for (const char* ext : {".yaml", ".yml", ".json"}) {
    const auto p = config_root() / "servers" / (gpu_name + ext);
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) {
      ServerSpec s = parse_server(read_file(p), p.string());
      if (s.gpu != gpu_name)
        throw InputError(p.string(), "gpu", "'" + gpu_name + "' (the file's name)", "'" + s.gpu + "'");
      return s;
    }
  }
  return std::nullopt;
}

}  // namespace kvplan::io
