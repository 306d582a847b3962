// Strict YAML accessors shared by the loaders: a missing key, a wrong type, a negative or
// non-finite number each throw InputError(file, key, expected, got).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>

#include "planner/types.h"

namespace kvplan::io {

//! Parses text; malformed YAML, an empty document or a non-mapping root is an InputError.
YAML::Node parse_yaml_mapping(const std::string& text, const std::string& file);

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
