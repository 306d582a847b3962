// kvplan calibrate: a kvplan.calibration/2 file with measurements in, the same file with
// every parameter those measurements determine fitted (least squares, calib/fit.h) out.
// Parameters the input already states are kept; --set adds measured serving overheads.
#include <iostream>

#include "calib/fit.h"
#include "cli/cli.h"
#include "io/calibration_io.h"
#include "io/config_io.h"

namespace kvplan::cli {

int cmd_calibrate(const Args& args) {
  po::options_description desc("kvplan calibrate MEASUREMENTS.json [options]");
  desc.add_options()
      ("help,h", "this help")
      ("input", po::value<std::string>(), "kvplan.calibration/2 file with measurements")
      ("merge", po::value<std::vector<std::string>>(),
       "another /2 file whose parameters (its own provenance kept) and accuracy statements are added; repeatable")
      ("source", po::value<std::string>(), "provenance of the result (default: the input's)")
      ("output,o", po::value<std::string>(), "write to FILE instead of stdout")
      ("force", po::bool_switch(), "overwrite the -o file if it exists");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError("kvplan calibrate", "", "valid options (kvplan calibrate --help)", e.what());
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (!vm.count("input")) throw InputError("kvplan calibrate", "MEASUREMENTS.json", "a calibration file", "nothing");
  const std::string in = vm["input"].as<std::string>();
  io::CalibrationFile c = io::parse_calibration_v2(io::read_file(in), in);
  std::map<std::string, calib::FitQuality> quality;
  if (!c.measurements.empty()) {
    calib::Datasheet d;
    if (!c.gpu.empty()) {
      const GpuSpec g = io::load_gpu(c.gpu);
      d.peak_flops_per_s = g.peak_flops.bf16;
      d.bandwidth_bytes_per_s = g.memory_bandwidth_bytes_per_s;
    } else if (!c.measurements.gemm.empty() || !c.measurements.hbm_copy.empty()) {
      throw InputError(in, "gpu", "a catalog GPU (efficiencies are fitted relative to its datasheet)", "nothing");
    }
    for (auto& [name, p] : calib::fit(c.measurements, d, in, &quality)) c.parameters.try_emplace(name, p);
  }
  if (vm.count("merge"))
    for (const std::string& f : vm["merge"].as<std::vector<std::string>>()) {
      const io::CalibrationFile other = io::parse_calibration_v2(io::read_file(f), f);
      for (const auto& [name, p] : other.parameters) c.parameters.try_emplace(name, p);
      // Accuracy statements describe the merged serving overheads' held-out replay.
      c.accuracy.insert(c.accuracy.end(), other.accuracy.begin(), other.accuracy.end());
      c.held_out_errors.insert(c.held_out_errors.end(), other.held_out_errors.begin(), other.held_out_errors.end());
    }
  if (vm.count("source")) c.source = vm["source"].as<std::string>();
  for (const auto& [table, q] : quality)
    std::cerr << "kvplan calibrate: " << table << ": " << q.samples << " rows, rms relative error "
              << q.rms_relative_error * 100 << " %\n";
  emit(vm, io::calibration_json(c));
  return 0;
}

}  // namespace kvplan::cli
