// kvplan serve: the what-if page (web/index.html, compiled in) and the JSON endpoints it
// calls, /api/plan, /api/simulate and /api/size, which run `kvplan plan`, `simulate` and
// `size` in process on the page's controls (capture_output): the page shows the documents
// the CLI prints for the same options and, for bad input, the CLI's exit-2 message. It
// reads no file beyond the catalog: model, GPU and workload are catalog names, and no
// option that names a file (a calibration, a time series, an output) is accepted. The one
// file written is size's HTML report, into a private temporary folder, read back and
// removed.
#include <httplib.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/cli.h"
#include "io/config_io.h"
#include "planner/types.h"
#include "web/page.h"

namespace kvplan::cli {

namespace {

//! The serving options the page's controls set, passed on as they are.
const std::set<std::string> kServingKeys = {
    "tensor-parallel-size", "pipeline-parallel-size", "expert-parallel-size", "data-parallel-size",
    "dtype", "quantization", "kv-cache-dtype", "block-size", "gpu-memory-utilization", "max-model-len",
    "max-num-seqs", "max-num-batched-tokens", "engine", "enable-prefix-caching"};
//! Beside them, plan's request shape and simulate's run and SLO.
const std::set<std::string> kPlanKeys = {"context", "batch"};
const std::set<std::string> kSimulateKeys = {"requests", "seed", "rate", "scheduler", "ttft-p99", "tpot-p99"};
//! What the page's Size button sets beside model, GPU list and workload: the question
//! (rate, SLO), the engine, and the search's evaluator. Size searches TP, weights and KV
//! dtype itself, so the page's settings of those are not passed.
const std::set<std::string> kSizeKeys = {"rate", "ttft-p99", "tpot-p99", "engine", "evaluator"};
//! GPUs one click sizes at most: each adds a search of every TP x weights x KV candidate
//! (24 for a dense model), simulated, and the page should answer in seconds. The CLI
//! sizes any number.
constexpr size_t kPageMaxGpus = 3;

//! The catalog file of `name` (one of `kvplan models`, `kvplan gpus` or the workloads),
//! never a path: the page may not make the server read other files.
std::string catalog_file(const std::string& kind, const std::string& name, const std::string& option) {
  const auto names = io::catalog(kind);
  if (std::find(names.begin(), names.end(), name) != names.end())
    for (const char* ext : {".yaml", ".yml", ".json"}) {
      const std::filesystem::path p = io::config_root() / kind / (name + ext);
      std::error_code ec;
      if (std::filesystem::is_regular_file(p, ec)) return p.string();
    }
  throw InputError("page", "--" + option, "a name from the " + kind + " catalog (the page reads no other file)",
                   "'" + name + "'");
}

void reply_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
}

//! Runs `command` on the request's parameters: model, gpu (and workload when `workload`)
//! by catalog name, the other keys only from `keys`, each as `--key=value`.
void answer(const httplib::Request& req, httplib::Response& res, int (*command)(const Args&),
            const std::set<std::string>& keys, bool workload) {
  try {
    Args args;
    for (const auto& [key, value] : req.params) {
      if (key == "model") args.push_back("--model=" + catalog_file("models", value, key));
      else if (key == "gpu") args.push_back("--gpu=" + catalog_file("gpus", value, key));
      else if (key == "workload" && workload) args.push_back("--workload=" + catalog_file("workloads", value, key));
      else if (keys.count(key) || kServingKeys.count(key)) args.push_back("--" + key + "=" + value);
      else throw InputError("page", "--" + key, "an option the page sets", "'" + key + "'");
    }
    args.emplace_back("--format=json");
    res.set_content(capture_output(command, args), "application/json");
  } catch (const InputError& e) {
    reply_error(res, 400, std::string("kvplan: error: ") + e.what());  // as main() prints it, exit 2
  } catch (const std::exception& e) {
    reply_error(res, 500, std::string("kvplan: internal error: ") + e.what());
  }
}

//! A folder of this process's own (mkdtemp), removed with what is in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string name = (std::filesystem::temp_directory_path() / "kvplan-serve-XXXXXX").string();
    if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder for the report");
    path_ = name;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

//! `kvplan size` on the request's parameters: {"size": its JSON document, "report": the
//! HTML report (--report) of the same run}.
void answer_size(const httplib::Request& req, httplib::Response& res) {
  try {
    Args args;
    size_t gpus = 0;
    for (const auto& [key, value] : req.params) {
      if (key == "model") args.push_back("--model=" + catalog_file("models", value, key));
      else if (key == "workload") args.push_back("--workload=" + catalog_file("workloads", value, key));
      else if (key == "gpus") {
        std::string files;
        for (const auto& name : split_list(value, "--gpus")) {
          files += (files.empty() ? "" : ",") + catalog_file("gpus", name, key);
          ++gpus;
        }
        args.push_back("--gpus=" + files);
      } else if (kSizeKeys.count(key)) args.push_back("--" + key + "=" + value);
      else throw InputError("page", "--" + key, "an option the page's Size sets", "'" + key + "'");
    }
    if (gpus == 0 || gpus > kPageMaxGpus)
      throw InputError("page", "--gpus",
                       "1 to " + std::to_string(kPageMaxGpus) +
                           " GPUs from the catalog (so that the page answers in seconds; `kvplan size` takes any number)",
                       std::to_string(gpus));
    const ScratchDir dir;
    const std::filesystem::path report = dir.path() / "report.html";
    args.push_back("--report=" + report.string());
    args.emplace_back("--format=json");
    const std::string doc = capture_output(cmd_size, args);
    std::ifstream in(report, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read back the report " + report.string());
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    res.set_content("{\"size\":" + doc + ",\"report\":" + nlohmann::json(html).dump() + "}", "application/json");
  } catch (const InputError& e) {
    reply_error(res, 400, std::string("kvplan: error: ") + e.what());
  } catch (const std::exception& e) {
    reply_error(res, 500, std::string("kvplan: internal error: ") + e.what());
  }
}

}  // namespace

int cmd_serve(const Args& args) {
  po::options_description desc(
      "kvplan serve: a what-if page in the browser (plan and simulate on its controls, size on a click)");
  desc.add_options()
      ("help,h", "this help")
      ("host", po::value<std::string>()->default_value("127.0.0.1"),
       "address to listen on (the page has no authentication: keep it local)")
      ("port", po::value<std::string>()->default_value("8000"), "TCP port; 0 picks a free one");
  const auto vm = parse(args, desc);
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  const std::string host = vm["host"].as<std::string>();
  const int port = static_cast<int>(parse_int_option(vm["port"].as<std::string>(), "--port", 0));
  if (port > 65535) throw InputError("command line", "--port", "a TCP port from 0 to 65535", std::to_string(port));
  // The catalog is the page's only data: fail now, not on the first request.
  const nlohmann::json catalog = {{"models", io::catalog("models")},
                                  {"gpus", io::catalog("gpus")},
                                  {"workloads", io::catalog("workloads")},
                                  {"engines", kEngineNames.choices()},
                                  {"quantization", kWeightQuantNames.choices()},
                                  {"size_max_gpus", kPageMaxGpus}};

  httplib::Server server;
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(web::page_html()), "text/html; charset=utf-8");
  });
  server.Get("/api/catalog", [&catalog](const httplib::Request&, httplib::Response& res) {
    res.set_content(catalog.dump(), "application/json");
  });
  server.Get("/api/plan", [](const httplib::Request& req, httplib::Response& res) {
    answer(req, res, cmd_plan, kPlanKeys, false);
  });
  server.Get("/api/simulate", [](const httplib::Request& req, httplib::Response& res) {
    answer(req, res, cmd_simulate, kSimulateKeys, true);
  });
  server.Get("/api/size", answer_size);
  const int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0)
    throw InputError("command line", "--port", "a port this process can listen on at " + host,
                     std::to_string(port) + " (in use, or the address is not this machine's)");
  if (host != "127.0.0.1" && host != "localhost" && host != "::1")
    std::cerr << "kvplan serve: note: listening on " << host
              << ": whoever reaches it can run plans and simulations (there is no authentication)\n";
  // The first line names the address (tests start the server on port 0 and read it).
  std::cout << "kvplan serve: http://" << (host.find(':') != std::string::npos ? "[" + host + "]" : host) << ":"
            << bound << "/ (Ctrl-C stops it)" << std::endl;
  if (!server.listen_after_bind()) throw std::runtime_error("the server stopped listening");
  return 0;
}

}  // namespace kvplan::cli
