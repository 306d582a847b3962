// kvplan cli: the only place that touches argv, stdout and exit codes.
// main.cpp dispatches `kvplan <command> ...` to one cmd_*.cpp each; commands throw
// InputError for bad input (main prints it and exits 2) and return 0 on success.
#pragma once

#include <boost/program_options.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "planner/names.h"
#include "planner/types.h"

namespace kvplan::cli {

namespace po = boost::program_options;
using Args = std::vector<std::string>;

enum class Format { table, json, md, csv };
inline constexpr NameTable<Format, 4> kFormatNames{{{
    {"table", Format::table}, {"json", Format::json}, {"md", Format::md}, {"csv", Format::csv},
}}};
//! --format: table|json|md|csv; default table.
Format parse_format(const std::string& s);

//! Adds the serving options shared by plan, simulate and size (ARCHITECTURE.md), all
//! taken as strings so that comma lists can expand: --tp 1,2 --kv-cache-dtype fp16,int4.
void add_serving_options(po::options_description& desc);
//! Adds --format and -o/--output.
void add_output_options(po::options_description& desc);
//! Every combination of the comma lists given (the cartesian product, in option order).
std::vector<ServingOptions> expand_serving_options(const po::variables_map& vm);
//! o with the KV quantization scheme reset to its defaults when the cache `kv` is 16 or
//! 32 bits wide (schemes apply to 8-bit and narrower caches only).
ServingOptions without_kv_scheme(const ServingOptions& o, DType kv);
//! Every option a command line can set is equal (the calibration is shared by all rows).
bool same_options(const ServingOptions& a, const ServingOptions& b);
//! "a,b,c" -> {"a","b","c"}; an empty item, a value given twice, or digit grouping that
//! reads as a list ("4,096") is an InputError naming the option.
std::vector<std::string> split_list(const std::string& s, const std::string& option);
//! A positive integer option value; InputError naming the option otherwise.
int64_t parse_int_option(const std::string& s, const std::string& option, int64_t min_value = 1);
double parse_num_option(const std::string& s, const std::string& option, double min_value,
                        double max_value);

//! Parses args against desc; unknown options and bad values are InputErrors.
po::variables_map parse(const Args& args, const po::options_description& desc);

//! Writes text to -o FILE (refusing to overwrite an existing file unless --force) or stdout.
void emit(const po::variables_map& vm, const std::string& text);
//! Runs one command (cmd_plan, cmd_simulate, cmd_size) in this thread and returns what it
//! would print on stdout: the Python binding and `kvplan serve` read the documents the CLI
//! prints, parsed and checked by the same code. Its InputErrors propagate unchanged.
std::string capture_output(int (*command)(const Args&), const Args& args);
//! InputError naming `option` when `path` exists (unless force) or is a directory; run
//! before long work so that a refused path fails fast.
void check_output_path(const std::string& option, const std::string& path, bool force);
//! InputError when options a and b (both output paths, e.g. "output" and "report") name
//! the same file.
void refuse_same_path(const po::variables_map& vm, const std::string& a, const std::string& b);
//! Writes text to path after check_output_path; a failed open, write or close (a full
//! disk, /dev/full) is an InputError naming `option` and the path.
void write_output(const std::string& option, const std::string& path, const std::string& text, bool force);

//! --help epilogue on comma lists and digit grouping, shared by plan, simulate and size.
extern const char* const kListHelp;

//! Two entries of one list that load the same model or GPU (a name and its file) are an
//! InputError naming the option: they would print the same rows twice.
template <typename T>
void refuse_duplicate_names(const std::vector<T>& items, const std::string& option) {
  for (size_t i = 0; i < items.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (items[i].name == items[j].name)
        throw InputError("command line", option, "each model or GPU once", "'" + items[i].name + "' twice");
}

int cmd_plan(const Args& args);
int cmd_models(const Args& args);
int cmd_gpus(const Args& args);
int cmd_simulate(const Args& args);
//! simulate --disagg (cmd_disagg.cpp), with simulate's parsed options.
int cmd_simulate_disagg(const po::variables_map& vm);
int cmd_size(const Args& args);
int cmd_validate(const Args& args);
int cmd_calibrate(const Args& args);
//! `kvplan serve`: the what-if page (cmd_serve.cpp; built when cpp-httplib is found).
int cmd_serve(const Args& args);

}  // namespace kvplan::cli
