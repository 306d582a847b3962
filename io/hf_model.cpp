#include "io/hf_model.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <system_error>

#include "io/config_io.h"
#include "planner/types.h"

namespace kvplan::io {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once, single-threaded start-up
  return v ? std::string(v) : std::string();
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

CheckpointFiles files_in(const fs::path& dir) {
  CheckpointFiles f{dir / "config.json", std::nullopt};
  if (is_file(dir / "hf_quant_config.json")) f.quant_config = dir / "hf_quant_config.json";
  return f;
}

//! The snapshot folder refs/main names in one cache's models--org--name, or why not.
std::optional<fs::path> snapshot_in(const fs::path& repo, std::string& why) {
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) {
    why = repo.string() + " (no such folder)";
    return std::nullopt;
  }
  const fs::path ref = repo / "refs" / "main";
  if (!is_file(ref)) {
    why = ref.string() + " (no such file: the revision the cache holds for main)";
    return std::nullopt;
  }
  std::string rev = read_file(ref, 4096);
  while (!rev.empty() && (rev.back() == '\n' || rev.back() == '\r' || rev.back() == ' ')) rev.pop_back();
  const fs::path snap = repo / "snapshots" / rev;
  if (rev.empty() || rev.find('/') != std::string::npos || !is_file(snap / "config.json")) {
    why = (snap / "config.json").string() + " (refs/main names revision '" + rev + "'; its config.json is not there)";
    return std::nullopt;
  }
  return snap;
}

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

}  // namespace

std::vector<fs::path> hub_cache_dirs() {
  // huggingface_hub/constants.py: HF_HUB_CACHE = $HF_HUB_CACHE or $HUGGINGFACE_HUB_CACHE
  // or $HF_HOME/hub, HF_HOME = $HF_HOME or $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface.
  if (const std::string c = env("HF_HUB_CACHE"); !c.empty()) return {fs::path(c)};
  if (const std::string c = env("HUGGINGFACE_HUB_CACHE"); !c.empty()) return {fs::path(c)};
  if (const std::string h = env("HF_HOME"); !h.empty()) return {fs::path(h) / "hub"};
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return {fs::path(x) / "huggingface" / "hub"};
  if (const std::string home = env("HOME"); !home.empty()) return {fs::path(home) / ".cache" / "huggingface" / "hub"};
  return {};
}

bool looks_like_hub_id(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() || name.find('/', slash + 1) != std::string::npos)
    return false;
  for (const char c : name)
    if (c != '/' && !id_char(c)) return false;
  if (name.front() == '.' || name[slash + 1] == '.') return false;  // ./x and ../x are paths
  const std::string ext = fs::path(name).extension().string();
  return ext != ".yaml" && ext != ".yml" && ext != ".json";
}

std::optional<CheckpointFiles> find_checkpoint(const std::string& name) {
  std::error_code ec;
  const fs::path given(name);
  if (fs::is_directory(given, ec)) {
    if (!is_file(given / "config.json"))
      throw InputError("--model", "", "a checkpoint folder holding config.json",
                       "'" + name + "', a folder without config.json");
    return files_in(given);
  }
  if (fs::exists(given, ec) || !looks_like_hub_id(name)) return std::nullopt;
  // models--org--name: the cache's folder for the repository (huggingface_hub
  // file_download.py repo_folder_name: "models" + "--" + repo_id with / as --).
  std::string folder = "models--" + name;
  folder.replace(folder.find('/'), 1, "--");
  std::vector<std::string> looked{"./" + name + " (no such folder)"};
  for (const fs::path& cache : hub_cache_dirs()) {
    std::string why;
    if (const auto snap = snapshot_in(cache / folder, why)) return files_in(*snap);
    looked.push_back(why);
  }
  if (looked.size() == 1) looked.emplace_back("no Hugging Face cache ($HF_HUB_CACHE, $HF_HOME and $HOME are unset)");
  std::string where;
  for (const auto& l : looked) where += (where.empty() ? " " : "; ") + l;
  throw InputError("--model", "",
                   "a local checkpoint folder or a Hub model in the local Hugging Face cache (kvplan does not use the "
                   "network; fetch the file with `huggingface-cli download " + name +
                       " config.json`, plus hf_quant_config.json for a ModelOpt checkpoint)",
                   "'" + name + "', not found in:" + where);
}

std::string checkpoint_config_text(const CheckpointFiles& files) {
  const std::string text = read_file(files.config);
  if (!files.quant_config) return text;
  const std::string file = files.config.string();
  const nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) throw InputError(file, "", "a JSON object", "text that is not one");
  if (config.contains("quantization_config")) return text;  // ModelOpt >= 0.31 writes it here
  const std::string qfile = files.quant_config->string();
  const nlohmann::json q = nlohmann::json::parse(read_file(*files.quant_config), nullptr, false);
  if (q.is_discarded() || !q.is_object() || !q.contains("quantization") || !q["quantization"].is_object())
    throw InputError(qfile, "quantization", "a mapping with quant_algo (NVIDIA ModelOpt's export)", "nothing");
  nlohmann::json merged = config;
  merged["quantization_config"] = q["quantization"];
  return merged.dump();
}

}  // namespace kvplan::io
