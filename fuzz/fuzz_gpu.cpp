// libFuzzer target: GPU files (io::parse_gpu), then the planner on what loaded.
#include "fuzz/fuzz_common.h"
#include "io/config_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvplan;
  GpuSpec g;
  try {
    g = io::parse_gpu(fuzz::text_of(data, size), "fuzz-gpu.yaml");
  } catch (const InputError&) {
    return 0;
  }
  fuzz::plan_with(fuzz::llama3_8b(), g);
  return 0;
}
