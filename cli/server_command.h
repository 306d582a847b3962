// `kvplan plan|simulate|size [kvplan options] -- SERVER COMMAND`: the serving engine's own
// command line (`vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server`,
// `python -m sglang.launch_server`, `trtllm-serve MODEL`) read flag by flag as the engine
// reads it and turned into kvplan's options. Each engine's flags are in one table here,
// with its source; docs/server-command.md lists them. A flag is modelled (mapped onto a
// kvplan option), accepted with a note that it does not change the plan, or refused:
// unknown, or changing the plan in a way kvplan does not model yet.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"

namespace kvplan::cli {

struct ServerCommand {
  Args args;                       //!< kvplan's options: those before "--", then the translation
  std::vector<std::string> notes;  //!< one line per flag that does not change the plan
};

//! `args` with what follows "--" read as a server command for kvplan `command` (plan,
//! simulate or size); args without "--" come back as they are. InputError (exit 2) for
//! an unknown flag, a flag kvplan does not model, a bad value, or an option given both
//! before "--" and in the server command.
ServerCommand read_server_command(const Args& args, const std::string& command);

//! read_server_command, printing its notes on stderr ("kvplan: note: ...").
Args with_server_command(const Args& args, const std::string& command);

}  // namespace kvplan::cli
