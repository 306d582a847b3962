// Asking a question without editing a workload file: --rate (size; simulate has its own),
// --ttft-p99, --tpot-p99, --prompt-tokens and --output-tokens override the workload
// file's values, or stand for a whole workload when --workload is not given.
#pragma once

#include <string>

#include "cli/cli.h"
#include "planner/workload.h"

namespace kvplan::cli {

//! Adds --ttft-p99, --tpot-p99, --prompt-tokens and --output-tokens, and --rate when
//! `with_rate` (size: simulate's --rate, which scales a trace, is its own).
void add_workload_question_options(po::options_description& desc, bool with_rate);

//! The workload `command` runs: --workload's file with the question options in place of
//! its values, or, without --workload, Poisson arrivals at --rate with the lengths and
//! SLO given (and `requests` requests). InputError naming what is missing or does not apply.
Workload question_workload(const po::variables_map& vm, const std::string& command, int64_t requests);

//! InputError when a question option is given to a mode that does not read it (`mode`:
//! "--disagg").
void refuse_question_options(const po::variables_map& vm, const std::string& mode);

}  // namespace kvplan::cli
