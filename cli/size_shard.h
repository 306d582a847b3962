// Sweeps beyond one machine: `kvplan size ... --shard I/N` evaluates the candidates whose
// index is I modulo N and writes what it found (kvplan.size-shard/1); `kvplan merge
// SHARD...` runs the same search reading those evaluations, so it prints what the
// unsharded run prints (docs/sharding.md).
#pragma once

#include <string>

#include "cli/cli.h"
#include "size/size.h"

namespace kvplan::cli {

//! Adds --shard I/N.
void add_shard_options(po::options_description& desc);

//! For --shard, or under `kvplan merge`, sets opt.wrap_simulator and returns whether
//! this run is a shard (its output is then shard_output()). `args` are size's own.
bool setup_shard(const po::variables_map& vm, const Args& args, const std::string& evaluator, size::SizeOptions& opt);

//! The shard file: its slice, the size arguments it ran with, and its evaluations.
std::string shard_output();

//! `kvplan merge SHARD.json... [--format F] [-o FILE] [--report FILE]`.
int cmd_merge(const Args& args);

}  // namespace kvplan::cli
