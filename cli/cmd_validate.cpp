// kvplan validate: runs gpu_validate's checks and prints predicted vs measured.
// --backend cpu runs the references in this process; --backend cuda runs the standalone
// kvplan_harness (beside this binary, or --harness PATH) as a child process and reads
// its JSON, so that `kvplan` links no GPU library. JSON: {"schema": "kvplan.validate/1",
// ...} (docs/validate.md), written by gv::report_json for both backends. Exit 0 when
// every check passes, 1 when one fails, 2 on bad input (including --backend cuda where
// no harness or no GPU is found).
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "gpu_validate/validate.h"
#include "reports/validate_report.h"

extern char** environ;

namespace kvplan::cli {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The harness: --harness, else beside this executable (installed layout) or in its
// gpu_validate/ build folder (build layout: build/kvplan, build/gpu_validate/kvplan_harness).
fs::path find_harness(const po::variables_map& vm) {
  if (vm.count("harness")) {
    const fs::path p = vm["harness"].as<std::string>();
    if (!fs::is_regular_file(p))
      throw InputError("command line", "--harness", "the path of a kvplan_harness executable",
                       "'" + p.string() + "' (no such file)");
    return p;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::string tried;
  if (!ec) {
    for (const fs::path& p : {self.parent_path() / "kvplan_harness", self.parent_path() / "gpu_validate" / "kvplan_harness"}) {
      if (fs::is_regular_file(p)) return p;
      tried += (tried.empty() ? "" : ", ") + p.string();
    }
  }
  throw InputError("command line", "--backend cuda",
                   "kvplan_harness beside kvplan (built where nvcc is found) or --harness PATH",
                   "none at " + (tried.empty() ? std::string("(the path of kvplan is unknown)") : tried));
}

gv::Compare compare_from(const std::string& s, const std::string& file) {
  for (gv::Compare c : {gv::Compare::exact, gv::Compare::relative, gv::Compare::at_least, gv::Compare::at_most,
                        gv::Compare::info})
    if (gv::to_string(c) == s) return c;
  throw std::runtime_error(file + ": unknown compare '" + s + "' in the harness's report");
}

// The harness's kvplan.validate/1 JSON back into a Report (JSON null is a non-finite number).
gv::Report report_from_json(const std::string& text, const std::string& file) {
  const auto j = nlohmann::json::parse(text);
  if (j.value("schema", "") != "kvplan.validate/1")
    throw std::runtime_error(file + ": not a kvplan.validate/1 report");
  auto number = [](const nlohmann::json& v) { return v.is_null() ? NAN : v.get<double>(); };
  gv::Report r;
  r.backend = j.at("backend").get<std::string>() == "cuda" ? gv::Backend::cuda : gv::Backend::cpu;
  r.device = j.at("device").get<std::string>();
  r.wall_s = number(j.at("wall_s"));
  for (const auto& c : j.at("checks")) {
    gv::Check k;
    k.group = c.at("group").get<std::string>();
    k.name = c.at("name").get<std::string>();
    k.quantity = c.at("quantity").get<std::string>();
    k.unit = c.at("unit").get<std::string>();
    k.predicted = number(c.at("predicted"));
    k.measured = number(c.at("measured"));
    k.error = number(c.at("error"));
    k.tolerance = number(c.at("tolerance"));
    k.compare = compare_from(c.at("compare").get<std::string>(), file);
    k.pass = c.at("pass").get<bool>();
    k.note = c.at("note").get<std::string>();
    r.checks.push_back(std::move(k));
  }
  return r;
}

// Runs the harness with `args`, its table discarded and its stderr kept; returns its
// report. The harness's exit 2 (no GPU, bad input) is the user's InputError.
gv::Report run_harness(const fs::path& harness, std::vector<std::string> args) {
  const fs::path tmp = fs::temp_directory_path() / ("kvplan_validate." + std::to_string(getpid()));
  const fs::path json = tmp.string() + ".json", err = tmp.string() + ".err";
  args.insert(args.begin(), {harness.string(), "--backend", "cuda", "--out", json.string()});
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, harness.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw InputError("command line", "--harness", "an executable kvplan_harness",
                                "'" + harness.string() + "' (" + std::strerror(rc) + ")");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  std::string why = read_text(err);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  std::error_code ec;
  fs::remove(err, ec);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 2) {
    fs::remove(json, ec);
    throw InputError(harness.string(), "--backend cuda", "a CUDA device the harness can use", why.empty() ? "exit 2" : why);
  }
  if ((code != 0 && code != 1) || !fs::is_regular_file(json)) {
    fs::remove(json, ec);
    throw InputError(harness.string(), "--harness", "a kvplan_harness that writes a kvplan.validate/1 report",
                     "exit status " + std::to_string(code) + " and no report" + (why.empty() ? "" : ": " + why));
  }
  if (!why.empty()) std::cerr << why << "\n";  // the harness's own warnings
  const gv::Report r = report_from_json(read_text(json), json.string());
  fs::remove(json, ec);
  return r;
}

}  // namespace

int cmd_validate(const Args& args) {
  po::options_description desc("kvplan validate: measure what the planner predicts (CPU references or CUDA kernels)");
  desc.add_options()
      ("help,h", "this help")
      ("backend", po::value<std::string>()->default_value("cpu"), "cpu|cuda (cuda runs kvplan_harness)")
      ("harness", po::value<std::string>(), "the kvplan_harness to run for --backend cuda (default: beside kvplan)")
      ("quick", po::bool_switch(), "smaller shapes, fewer repetitions")
      ("npy-k", po::value<std::string>(), "keys to quantize too (.npy, [T, C] or [T, H, D])")
      ("npy-v", po::value<std::string>(), "values matching --npy-k (default: the keys)")
      ("calibration-out", po::value<std::string>(), "write what was measured as a kvplan.calibration/2 file")
      ("datasheet-bandwidth", po::value<std::string>(), "datasheet memory bandwidth, bytes/s (devices not in configs/gpus)")
      ("datasheet-flops", po::value<std::string>(), "datasheet dense bf16 FLOP/s (devices not in configs/gpus)");
  add_output_options(desc);
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  const Format format = parse_format(vm.count("format") ? vm["format"].as<std::string>() : "table");
  gv::Options o;
  const std::string backend = vm["backend"].as<std::string>();
  if (backend == "cpu") o.backend = gv::Backend::cpu;
  else if (backend == "cuda") o.backend = gv::Backend::cuda;
  else throw InputError("command line", "--backend", "cpu or cuda", "'" + backend + "'");
  o.quick = vm["quick"].as<bool>();
  // A FIFO would block the .npy reader's open forever: regular files only.
  for (const char* key : {"npy-k", "npy-v"}) {
    if (!vm.count(key)) continue;
    const std::string path = vm[key].as<std::string>();
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (fs::exists(st) && !fs::is_regular_file(st))
      throw InputError(path, "", "a regular .npy file", "a directory, device, FIFO or other special file");
  }
  if (vm.count("npy-k")) o.npy_k = vm["npy-k"].as<std::string>();
  if (vm.count("npy-v")) {
    if (o.npy_k.empty()) throw InputError("command line", "--npy-v", "--npy-k as well", "--npy-v alone");
    o.npy_v = vm["npy-v"].as<std::string>();
  }
  if (vm.count("datasheet-bandwidth"))
    o.datasheet_bandwidth_bytes_per_s = parse_num_option(vm["datasheet-bandwidth"].as<std::string>(), "--datasheet-bandwidth", 1e6, 1e16);
  if (vm.count("datasheet-flops"))
    o.datasheet_peak_flops_per_s = parse_num_option(vm["datasheet-flops"].as<std::string>(), "--datasheet-flops", 1e6, 1e19);
  const std::string calib_path = vm.count("calibration-out") ? vm["calibration-out"].as<std::string>() : "";
  const bool force = vm["force"].as<bool>();
  refuse_same_path(vm, "output", "calibration-out");
  if (!calib_path.empty()) check_output_path("--calibration-out", calib_path, force);
  if (vm.count("output")) check_output_path("--output", vm["output"].as<std::string>(), force);

  gv::Report r;
  if (o.backend == gv::Backend::cuda) {
    std::vector<std::string> h;
    if (o.quick) h.emplace_back("--quick");
    if (!o.npy_k.empty()) h.insert(h.end(), {"--npy-k", o.npy_k});
    if (!o.npy_v.empty()) h.insert(h.end(), {"--npy-v", o.npy_v});
    if (!calib_path.empty()) h.insert(h.end(), {"--calibration-out", calib_path});
    // The figures as the user typed them (parse_num_option checked them): the harness
    // reads the same digits.
    for (const char* key : {"datasheet-bandwidth", "datasheet-flops"})
      if (vm.count(key)) h.insert(h.end(), {std::string("--") + key, vm[key].as<std::string>()});
    r = run_harness(find_harness(vm), h);
  } else {
    try {
      r = gv::run_validation(o);
    } catch (const std::runtime_error& e) {
      // Unreadable .npy files are the user's input; anything else is ours.
      const std::string what = e.what();
      if (what.find(".npy") != std::string::npos || what.find("npy file") != std::string::npos)
        throw InputError(o.npy_k, "", "a float16/32/64 .npy array", what);
      throw;
    }
    if (!calib_path.empty()) {
      write_output("--calibration-out", calib_path, gv::calibration_json(r.calibration), force);
    }
  }

  std::string text;
  switch (format) {
    case Format::json: text = gv::report_json(r); break;
    case Format::md: text = reports::validate_text(r, reports::TextFormat::md); break;
    case Format::csv: text = reports::validate_text(r, reports::TextFormat::csv); break;
    case Format::table: text = reports::validate_text(r, reports::TextFormat::table); break;
  }
  emit(vm, text);
  if (!r.all_pass()) {
    std::cerr << "kvplan validate: some checks failed (see the table)\n";
    return 1;
  }
  return 0;
}

}  // namespace kvplan::cli
