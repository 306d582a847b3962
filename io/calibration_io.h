// kvplan io: calibration files, kvplan.calibration/1 (gpu_validate's efficiencies) and
// kvplan.calibration/2 (named parameters with provenance plus raw measurements;
// docs/calibration.md). Every error is an InputError naming the file and the key.
#pragma once

#include <string>

#include "calib/fit.h"
#include "planner/types.h"

namespace kvplan::io {

//! A /2 file as written: its header, parameters and measurements.
struct CalibrationFile {
  std::string device, gpu, source, created;
  calib::Parameters parameters;
  calib::Measurements measurements;
  std::vector<AccuracyNote> accuracy;  // "accuracy": [{scope: all|dense|moe, text}]
  //! "held_out_errors": [{run, gpu, moe, ttft, tpot, e2e}]: signed relative errors
  std::vector<MeasuredError> held_out_errors;
};

//! Parses kvplan.calibration/2 text (JSON or YAML); `file` names it in errors.
CalibrationFile parse_calibration_v2(const std::string& text, const std::string& file);

//! Fits the parameters its measurements determine (the file's `gpu` gives the datasheet
//! the efficiencies are relative to) and adds those the file does not already state.
void fit_missing(CalibrationFile& c, const std::string& file);

//! The planner's Calibration from a /2 file: stated parameters, then fitted ones.
Calibration to_calibration(const CalibrationFile& c, const std::string& file);

//! Writes a /2 file (parameters and measurements) as JSON.
std::string calibration_json(const CalibrationFile& c);

}  // namespace kvplan::io
