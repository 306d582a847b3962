// libFuzzer target: workload files (io::parse_workload) and, with the same bytes, request
// trace CSVs (io::parse_trace). A workload's `trace:` key may point at a
// file; the target's file name sits in a folder that does not exist, so only absolute
// paths or paths under the project root resolve (read, never written).
#include "fuzz/fuzz_common.h"
#include "io/workload_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvplan;
  try {
    (void)io::parse_workload(fuzz::text_of(data, size), "/nonexistent-fuzz-dir/fuzz-workload.yaml");
  } catch (const InputError&) {
  }
  try {
    (void)io::parse_trace(fuzz::text_of(data, size), "fuzz-trace.csv");
  } catch (const InputError&) {
  }
  return 0;
}
