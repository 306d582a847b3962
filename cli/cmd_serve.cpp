// kvplan serve: the what-if page (web/index.html, compiled in) and the two JSON endpoints
// it calls, /api/plan and /api/simulate, which run `kvplan plan` and `kvplan simulate`
// in process on the page's controls (capture_output): the page shows the documents the CLI
// prints for the same options and, for bad input, the CLI's exit-2 message. It reads no
// file beyond the catalog: model, GPU and workload are catalog names, and no option that
// names a file (a calibration, a time series, an output) is accepted.
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
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

}  // namespace

int cmd_serve(const Args& args) {
  po::options_description desc("kvplan serve: a what-if page in the browser (plan and simulate on its controls)");
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
                                  {"quantization", kWeightQuantNames.choices()}};

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
