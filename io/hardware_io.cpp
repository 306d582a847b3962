#include "io/hardware_io.h"

#include <algorithm>
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
  // Required: a host KV tier is checked against it, and a guess would pass a tier the
  // server cannot hold.
  s.host_memory_bytes = req_int(n, "host_memory_bytes", file, 1);
  s.host_memory_max_bytes = opt_int(n, "host_memory_max_bytes", file, s.host_memory_bytes).value_or(0);
  // Required: a liquid-cooled server read as air-cooled would be planned into a site
  // that cannot take its heat away.
  const std::string cooling = req_str(n, "cooling", file);
  if (cooling != "air" && cooling != "liquid")
    throw InputError(file, "cooling", "air or liquid (what carries the server's heat away)", "'" + cooling + "'");
  s.liquid_cooled = cooling == "liquid";
  return s;
}

namespace {

//! What a node holds, quoted for a message.
std::string got(const YAML::Node& v) {
  if (!v.IsDefined() || v.IsNull()) return "nothing";
  if (v.IsScalar()) return "'" + v.Scalar() + "'";
  return v.IsMap() ? "a mapping" : "a list";
}

//! A mapping under `key` whose keys are all among `known` (a message names the first
//! stranger as key.stranger).
void check_block(const YAML::Node& b, const std::string& key, std::initializer_list<const char*> known,
                 const std::string& file) {
  std::string list;
  for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
  if (!b.IsMap()) throw InputError(file, key, "a mapping {" + list + "}", got(b));
  for (const auto& kv : b) {
    const auto k = kv.first.as<std::string>();
    if (std::none_of(known.begin(), known.end(), [&](const char* x) { return k == x; }))
      throw InputError(file, key + "." + k, known.size() == 1 ? "only the key " + list : "one of the keys " + list,
                       "an unknown key");
  }
}

//! An integer in [min_value, max_value] at b[k], the message naming key.k.
int64_t block_int(const YAML::Node& b, const std::string& key, const char* k, int64_t min_value, int64_t max_value,
                  const std::string& file) {
  const YAML::Node v = b[k];
  const std::string expected =
      "an integer from " + std::to_string(min_value) + " to " + std::to_string(max_value) + " (the key is required)";
  int64_t x = 0;
  try {
    x = req_int(b, k, file, min_value);
  } catch (const InputError&) {
    throw InputError(file, key + "." + k, expected, got(v));
  }
  if (x > max_value) throw InputError(file, key + "." + k, expected, std::to_string(x));
  return x;
}

}  // namespace

void parse_gpu_platform(const YAML::Node& n, const std::string& file, GpuSpec& g) {
  // "9.0", "8.9", "12.1": what torch.cuda.get_device_capability() and nvidia-smi's
  // compute_cap give. A float would read 12.1 and 12.10 alike, so the text is parsed.
  if (const YAML::Node cc = n["compute_capability"]; cc.IsDefined()) {
    const std::string text = cc.IsScalar() ? cc.Scalar() : "";
    const auto dot = text.find('.');
    const auto digits = [](const std::string& t) {
      return !t.empty() && t.size() <= 2 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dot == std::string::npos || !digits(text.substr(0, dot)) || text.size() - dot - 1 != 1 ||
        !digits(text.substr(dot + 1)) || text[0] == '0')
      throw InputError(file, "compute_capability", "a CUDA compute capability MAJOR.MINOR such as \"9.0\" or \"12.1\"",
                       got(cc));
    g.compute_capability_x10 = std::stoi(text.substr(0, dot)) * 10 + (text[dot + 1] - '0');
  }
  g.architecture = opt_str(n, "architecture", file).value_or("");
  if (const YAML::Node names = n["cuda_device_names"]; names.IsDefined()) {
    const std::string expected = "a list of CUDA device names such as [\"NVIDIA H100 80GB HBM3\"]";
    if (!names.IsSequence()) throw InputError(file, "cuda_device_names", expected, got(names));
    for (const YAML::Node& v : names) {
      if (!v.IsScalar() || v.Scalar().empty()) throw InputError(file, "cuda_device_names", expected, got(v));
      g.cuda_device_names.push_back(v.Scalar());
    }
  }
  if (const YAML::Node pf = n["peak_flops"]; pf.IsMap()) {
    for (const char* k : {"fp6", "fp4"}) {
      const YAML::Node v = pf[k];
      double rate = 0;
      try {
        rate = opt_num(pf, k, file, 0).value_or(0.0);
      } catch (const InputError&) {
        throw InputError(file, std::string("peak_flops.") + k, "a finite number >= 0", got(v));
      }
      (std::string_view(k) == "fp6" ? g.peak_flops.fp6 : g.peak_flops.fp4) = rate;
    }
  }
  if (const YAML::Node su = n["scale_up"]; su.IsDefined()) {
    check_block(su, "scale_up", {"domain_gpus"}, file);
    // An NVL576 rack is the largest NVLink domain announced; 1024 bounds the arithmetic.
    g.scale_up_domain_gpus = block_int(su, "scale_up", "domain_gpus", 1, 1024, file);
  }
  if (const YAML::Node um = n["unified_memory"]; um.IsDefined()) {
    check_block(um, "unified_memory", {"shared_with_cpu", "free_at_start_bytes"}, file);
    const YAML::Node shared = um["shared_with_cpu"];
    if (!shared.IsDefined() || !shared.IsScalar() || shared.Scalar() != "true")
      throw InputError(file, "unified_memory.shared_with_cpu",
                       "true (the block describes memory the CPU shares; a GPU with memory of its own has no block)",
                       got(shared));
    g.unified_free_at_start_bytes =
        block_int(um, "unified_memory", "free_at_start_bytes", 1, g.memory_bytes, file);
  }
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
