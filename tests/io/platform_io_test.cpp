// The platform keys of a GPU file (docs/formats.md "GPU file"): compute_capability,
// architecture, peak_flops.fp6 / fp4, scale_up, unified_memory; and the catalog's parts
// that need them.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "io/config_io.h"
#include "planner/types.h"

using namespace kvplan;

namespace {

const std::string kBase =
    "name: test-gpu\nmemory_bytes: 1000000000\nmemory_bandwidth_bytes_per_s: 1e12\n"
    "interconnect_bytes_per_s: 64e9\n";

GpuSpec parse(const std::string& extra, const std::string& peaks = "peak_flops: {bf16: 1e15}\n") {
  return io::parse_gpu(kBase + peaks + extra, "g.yaml");
}

std::string message(const std::string& extra, const std::string& peaks = "peak_flops: {bf16: 1e15}\n") {
  try {
    parse(extra, peaks);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a GPU file's platform keys") {
  const GpuSpec old = parse("");
  CHECK(old.compute_capability_x10 == 0);
  CHECK(old.scale_up_domain_gpus == 0);
  CHECK_FALSE(old.unified_free_at_start_bytes.has_value());
  CHECK(old.peak_flops.fp4 == 0);

  const GpuSpec g = parse(
      "compute_capability: \"12.1\"\narchitecture: Blackwell\nscale_up: {domain_gpus: 72}\n"
      "unified_memory: {shared_with_cpu: true, free_at_start_bytes: 900000000}\n",
      "peak_flops: {bf16: 1e15, fp8: 2e15, fp6: 2e15, fp4: 4e15}\n");
  CHECK(g.compute_capability_x10 == 121);
  CHECK(g.architecture == "Blackwell");
  CHECK(g.scale_up_domain_gpus == 72);
  CHECK(g.unified_free_at_start_bytes == 900000000);
  CHECK(g.peak_flops.fp6 == 2e15);
  CHECK(g.peak_flops.fp4 == 4e15);
  CHECK(parse("compute_capability: \"9.0\"\n").compute_capability_x10 == 90);
}

TEST_CASE("malformed platform keys are InputErrors naming the key") {
  CHECK(message("compute_capability: 9\n").find("key 'compute_capability'") != std::string::npos);
  CHECK(message("compute_capability: \"9.10\"\n").find("key 'compute_capability'") != std::string::npos);
  CHECK(message("compute_capability: \"sm_90\"\n").find("key 'compute_capability'") != std::string::npos);
  CHECK(message("scale_up: {domain_gpus: 0}\n").find("key 'scale_up.domain_gpus'") != std::string::npos);
  CHECK(message("scale_up: {domain_gpus: 2000}\n").find("key 'scale_up.domain_gpus'") != std::string::npos);
  CHECK(message("scale_up: {gpus: 8}\n").find("key 'scale_up.gpus'") != std::string::npos);
  CHECK(message("scale_up: 8\n").find("key 'scale_up'") != std::string::npos);
  CHECK(message("unified_memory: {shared_with_cpu: false, free_at_start_bytes: 5}\n")
            .find("key 'unified_memory.shared_with_cpu'") != std::string::npos);
  // More free than the whole pool (memory_bytes 1e9) cannot be.
  CHECK(message("unified_memory: {shared_with_cpu: true, free_at_start_bytes: 2000000000}\n")
            .find("key 'unified_memory.free_at_start_bytes'") != std::string::npos);
  CHECK(message("unified_memory: {shared_with_cpu: true}\n").find("key 'unified_memory.free_at_start_bytes'") !=
        std::string::npos);
  CHECK(message("", "peak_flops: {bf16: 1e15, fp4: -1}\n").find("key 'peak_flops.fp4'") != std::string::npos);
}

TEST_CASE("every catalog GPU names its scale-up domain, its architecture and a scale-out link") {
  for (const auto& name : io::catalog("gpus")) {
    CAPTURE(name);
    const GpuSpec g = io::load_gpu(name);
    CHECK(g.scale_up_domain_gpus >= 1);
    CHECK_FALSE(g.architecture.empty());
    CHECK(g.scale_out().has_value());
    // NVIDIA parts give the compute capability engines decide on; AMD parts (ROCm's
    // gfx names) do not have one.
    CHECK((g.compute_capability_x10 > 0) == (g.architecture.find("CDNA") == std::string::npos));
  }
}

TEST_CASE("the parts buyers compare in 2026 are in the catalog with their datasheet figures") {
  const auto names = io::catalog("gpus");
  for (const char* part : {"gb200-nvl72", "b300", "gb300-nvl72", "h20", "h800", "mi325x", "mi355x", "rtx-pro-6000", "l20",
                           "a10g", "rtx-5090", "gh200", "gb10"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), part) != names.end(), part);
  // GB200 NVL72 (rack, with sparsity): FP4 1,440 PF, FP16/BF16 360 PF over 72 GPUs, halved
  // for dense: 10 PF and 2.5 PF a GPU; NVLink 130 TB/s / 72 = 1.8 TB/s, 900 GB/s each way.
  const GpuSpec nvl72 = io::load_gpu("gb200-nvl72");
  CHECK(nvl72.peak_flops.fp4 == doctest::Approx(1440e15 / 72 / 2));
  CHECK(nvl72.peak_flops.bf16 == doctest::Approx(360e15 / 72 / 2));
  CHECK(nvl72.interconnect_bytes_per_s == doctest::Approx(130e12 / 72 / 2).epsilon(0.01));
  CHECK(nvl72.scale_up_domain_gpus == 72);
  CHECK(nvl72.compute_capability_x10 == 100);
  // H800: H100 SXM compute, NVLink 400 GB/s total = 200 GB/s per direction.
  const GpuSpec h800 = io::load_gpu("h800");
  CHECK(h800.peak_flops.fp8 == io::load_gpu("h100-sxm").peak_flops.fp8);
  CHECK(h800.interconnect_bytes_per_s == 200e9);
  // H20: FP8 296 TFLOPS dense, 4.0 TB/s.
  CHECK(io::load_gpu("h20").peak_flops.fp8 == 296e12);
  // MI355X: MXFP4 10.1 PF dense (data sheet), CDNA 4.
  CHECK(io::load_gpu("mi355x").peak_flops.fp4 == doctest::Approx(10.1e15).epsilon(0.01));
  // RTX 5090: deviceQuery's 33,677,180,928 bytes; compute capability 12.0.
  const GpuSpec rtx = io::load_gpu("rtx-5090");
  CHECK(rtx.memory_bytes == 33677180928LL);
  CHECK(rtx.compute_capability_x10 == 120);
  // A10G (compute capability 8.6): no FP8.
  CHECK(io::load_gpu("a10g").peak_flops.fp8 == 0);
  // GB10 shares its pool with the CPU; GH200's Grace memory is a second pool, not shared.
  CHECK(io::load_gpu("gb10").unified_free_at_start_bytes.has_value());
  CHECK_FALSE(io::load_gpu("gh200").unified_free_at_start_bytes.has_value());
}
