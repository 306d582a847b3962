// Strict YAML accessors shared by the loaders: a missing key, a wrong type, a negative or
// non-finite number each throw InputError(file, key, expected, got).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/types.h"

namespace kvplan::io {

//! Parses text; malformed YAML, an empty document or a non-mapping root is an InputError.
YAML::Node parse_yaml_mapping(const std::string& text, const std::string& file);

//! A mapping of module names to values, in file order; equal values read from JSON share
//! one node (ModelOpt's quantized_layers: 22,422 modules and two distinct values in
//! nvidia/MiniMax-M3-NVFP4, whose yaml-cpp nodes took 120 ms to build).
struct ModuleTable {
  std::vector<std::pair<std::string, size_t>> entries;  //!< module name, index into values
  std::vector<YAML::Node> values;
};

//! A model file: its tree and, for JSON, each quantization_config.quantized_layers
//! mapping read aside (the tree holds an empty mapping in its place).
struct ModelDocument {
  YAML::Node root;
  std::vector<std::pair<YAML::Node, ModuleTable>> aside;
  //! The entries of a mapping of this document: read aside (moved out), else its own.
  ModuleTable take_table(const YAML::Node& map);
};

//! As parse_yaml_mapping, reading quantized_layers aside.
ModelDocument parse_model_document(const std::string& text, const std::string& file);

//! Integer >= min_value (whole numbers written as 4096, 4096.0 or 4.096e3 are accepted).
std::optional<int64_t> opt_int(const YAML::Node& n, const std::string& key,
                               const std::string& file, int64_t min_value = 1);
int64_t req_int(const YAML::Node& n, const std::string& key, const std::string& file,
                int64_t min_value = 1);
//! Finite number >= min_value (and <= max_value).
std::optional<double> opt_num(const YAML::Node& n, const std::string& key,
                              const std::string& file, double min_value = 0,
                              double max_value = 1e300);
double req_num(const YAML::Node& n, const std::string& key, const std::string& file,
               double min_value = 0, double max_value = 1e300);
std::optional<bool> opt_bool(const YAML::Node& n, const std::string& key,
                             const std::string& file);
std::optional<std::string> opt_str(const YAML::Node& n, const std::string& key,
                                   const std::string& file);
std::string req_str(const YAML::Node& n, const std::string& key, const std::string& file);

}  // namespace kvplan::io
