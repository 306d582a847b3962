// kvplan cli: the speculative decoding flags (vLLM's --speculative-config, SGLang's
// --speculative-*) and the acceptance inputs, shared by every command that takes
// serving options.
#pragma once

#include <memory>

#include "cli/cli.h"
#include "planner/speculative.h"

namespace kvplan::cli {

void add_spec_options(po::options_description& desc);
//! The speculation the flags ask for, or null when none. InputError (exit 2) naming the
//! flag for malformed JSON, an unknown method, k < 1, a rate outside [0, 1], flags of one
//! engine mixed with the other's, or a draft kvplan cannot load.
std::shared_ptr<const SpecDecode> parse_spec_options(const po::variables_map& vm);

}  // namespace kvplan::cli
