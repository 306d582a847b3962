// kvplan io: purchase data of a GPU type (configs/servers/<gpu>.yaml) into ServerSpec.
// Every error is an InputError naming the file, the key and what was expected.
#pragma once

#include <optional>
#include <string>

#include "planner/hardware.h"

namespace kvplan::io {

//! The purchase data for catalog GPU `gpu_name` (configs/servers/<gpu_name>.yaml), or
//! nullopt when the catalog has none for it. A file that exists but is bad throws.
std::optional<ServerSpec> find_server(const std::string& gpu_name);
//! A server file by catalog name or path.
ServerSpec load_server(const std::string& name_or_path);
//! Parses server text; `file` names it in errors.
ServerSpec parse_server(const std::string& text, const std::string& file);

}  // namespace kvplan::io
