// kvplan io: a model named as the Hugging Face Hub names it (`org/name`) or a local
// checkpoint directory, found on this machine without the network: the directory's
// config.json, or the Hub cache's snapshot that refs/main points to
// (docs/server-command.md "Models by their Hub name").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kvplan::io {

//! The files of one checkpoint kvplan reads: config.json, and NVIDIA ModelOpt's
//! hf_quant_config.json beside it when present.
struct CheckpointFiles {
  std::filesystem::path config;
  std::optional<std::filesystem::path> quant_config;
};

//! The Hub caches to search, in order: $HF_HUB_CACHE (else the older
//! $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
//! else ~/.cache/huggingface/hub (huggingface_hub/constants.py).
std::vector<std::filesystem::path> hub_cache_dirs();

//! Whether `name` reads as a Hub model id: `org/name`, one slash, letters, digits and
//! `-_.` only, not a .yaml/.yml/.json file name.
bool looks_like_hub_id(const std::string& name);

//! `name` as a checkpoint: an existing directory holding config.json, or a Hub id found
//! in a cache (models--org--name/refs/main -> snapshots/<revision>/config.json).
//! nullopt when `name` is neither a directory nor a Hub id (a file or catalog name);
//! InputError when it is one of them but config.json is not there, naming every place
//! looked in and the command that fetches the file.
std::optional<CheckpointFiles> find_checkpoint(const std::string& name);

//! config.json's text with hf_quant_config.json's `quantization` section as its
//! quantization_config when config.json has none (vLLM reads ModelOpt checkpoints so:
//! vllm/transformers_utils/config.py, get_hf_file_to_dict("hf_quant_config.json")).
std::string checkpoint_config_text(const CheckpointFiles& files);

}  // namespace kvplan::io
