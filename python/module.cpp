// _kvplan: the extension behind `import kvplan` (python/kvplan/__init__.py). run() is the
// CLI's plan, simulate or size command run in this process on the argument list the Python
// side built from keyword arguments: the same option parsing, checks and JSON document.
// kvplan::InputError (the CLI's exit 2) becomes kvplan.InputError with the CLI's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "cli/cli.h"
#include "io/config_io.h"

namespace {

std::string run(const std::string& command, const std::vector<std::string>& args) {
  using namespace kvplan::cli;
  if (command == "plan") return capture_output(cmd_plan, args);
  if (command == "simulate") return capture_output(cmd_simulate, args);
  if (command == "size") return capture_output(cmd_size, args);
  throw kvplan::InputError("python", "command", "plan, simulate or size", "'" + command + "'");
}

}  // namespace

PYBIND11_MODULE(_kvplan, m) {
  m.doc() = "kvplan's commands in process; use the kvplan package (plan, simulate, size)";
  pybind11::register_exception<kvplan::InputError>(m, "InputError", PyExc_ValueError);
  // A simulation or a search runs for seconds: other Python threads go on meanwhile.
  m.def("run", &run, pybind11::arg("command"), pybind11::arg("args"),
        pybind11::call_guard<pybind11::gil_scoped_release>(),
        "Runs `kvplan COMMAND ARGS...` and returns what it prints (ARGS as the CLI takes them).");
  m.def("catalog", &kvplan::io::catalog, pybind11::arg("kind"),
        "The catalog's names of one kind: models, gpus or workloads.");
}
