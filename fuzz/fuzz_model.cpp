// libFuzzer target: model files (io::parse_model), then the planner on what loaded.
#include "fuzz/fuzz_common.h"
#include "io/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvplan;
  ModelConfig m;
  try {
    m = io::parse_model(fuzz::text_of(data, size), "fuzz-model.yaml");
  } catch (const InputError&) {
    return 0;
  }
  fuzz::plan_with(m, fuzz::h100());
  return 0;
}
