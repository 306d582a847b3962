// kvplan io: workload files (ARCHITECTURE.md "Workload file") and request traces (CSV
// with columns arrival_s,prompt_tokens,output_tokens) into Workload values.
// Every error is an InputError naming the file, the key (nested keys dotted:
// "arrival.rate_per_s"; trace columns by name) and what was expected.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "planner/workload.h"

namespace kvplan::io {

//! A length distribution given on the command line as option `option` (--prompt-tokens):
//! a bare integer is `dist: fixed`; otherwise the workload file's keys as key=value
//! pairs, comma-separated (dist=uniform,min=128,max=1024; dist=lognormal,mean=600,
//! sigma=0.8,max=4096), checked as a workload file's are. `trace` has no file here.
LengthDist parse_length_option(const std::string& text, const std::string& option);

//! A catalog name (configs/workloads/<name>.yaml) or a path to a workload file.
Workload load_workload(const std::string& name_or_path);

//! Parses workload text. `file` names it in errors; a relative `trace:` path is looked up
//! beside `file` first, then under the data folder (io::find_data_root).
Workload parse_workload(const std::string& text, const std::string& file);

//! Where a workload's `trace:` value points: absolute as given; relative, beside the
//! workload file if it exists there, else under the data folder. InputError (key
//! `trace`) when neither exists.
std::filesystem::path resolve_trace(const std::string& trace, const std::string& workload_file);

//! A trace row is about 20 bytes of CSV, so 1 GiB holds some 50 million requests (the
//! Azure 2023 traces in configs/traces have 8,819 and 19,366); the cap stops a wrong path
//! before it fills memory.
constexpr int64_t kMaxTraceBytes = int64_t{1} << 30;

//! Reads a trace CSV (UTF-8, a byte-order mark allowed) of at most kMaxTraceBytes: a header naming the three columns, then one request per line,
//! arrivals non-decreasing; the rows are shifted so the first arrives at 0.
std::shared_ptr<const std::vector<TraceRow>> load_trace(const std::filesystem::path& path);
std::vector<TraceRow> parse_trace(const std::string& text, const std::string& file);

}  // namespace kvplan::io
