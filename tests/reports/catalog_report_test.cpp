// reports/catalog_report.h: `kvplan models` and `kvplan gpus` rows, from hand-written
// catalog entries (tests/fixtures.h), with the figures worked by hand.
#include <doctest/doctest.h>

#include <string>

#include "reports/catalog_report.h"
#include "tests/fixtures.h"

using namespace kvplan;

namespace {
reports::CatalogModel llama() {
  // Llama-3-8B: 8,030,261,248 parameters (its model card's 8.03 B); KV per token at 16
  // bits = 2 (K and V) x 32 layers x 8 heads x 128 x 2 bytes = 131,072 B = 128.0 KiB.
  return {test::llama3_8b(), 8'030'261'248, 131'072};
}
}  // namespace

TEST_CASE("models: shape, attention kind, parameters in billions and KV per token") {
  const std::string text = reports::models_text({llama()}, reports::TextFormat::table);
  CHECK(text.find("llama-3-8b") != std::string::npos);
  CHECK(text.find("GQA") != std::string::npos);  // 8 KV heads for 32 query heads
  CHECK(text.find("8.03 B") != std::string::npos);
  CHECK(text.find("128.0 KiB") != std::string::npos);
  CHECK(text.find(" - ") != std::string::npos);  // no published count: "-"
  CHECK(text.substr(text.size() - 19) == "B = 1e9 parameters\n");
  CHECK(reports::billions(70'553'706'496) == "70.55 B");
}

TEST_CASE("models as CSV: raw numbers, units in the header, no footnote") {
  reports::CatalogModel m = llama();
  m.model.published_params = 8'000'000'000;
  CHECK(reports::models_text({m}, reports::TextFormat::csv) ==
        "name,type,layers,hidden_size,heads,kv_heads,attention,params_computed,params_published,"
        "kv_bytes_per_token_16bit,experts,experts_per_token\n"
        "llama-3-8b,llama,32,4096,32,8,GQA,8030261248,8000000000,131072,,\n");
}

TEST_CASE("GPUs: memory in GiB and GB, bandwidth in GB/s, dense TFLOP/s, price") {
  GpuSpec g = test::h100();
  g.price_per_hour_usd = 3.35;
  const std::string text = reports::gpus_text({g}, reports::TextFormat::md);
  // 85,029,158,912 B = 79.19 GiB = 85.03 GB; 3.35e12 B/s = 3350 GB/s; 989.4e12 = 989.4
  // TFLOP/s bf16, 1978.9e12 fp8; NVLink 450e9 = 450 GB/s.
  CHECK(text ==
        "| name     | memory (CUDA) |   memory | bandwidth |    bf16 dense |      fp8 dense | interconnect |   price |\n"
        "|----------|--------------:|---------:|----------:|--------------:|---------------:|-------------:|--------:|\n"
        "| h100-sxm |     79.19 GiB | 85.03 GB | 3350 GB/s | 989.4 TFLOP/s | 1978.9 TFLOP/s |     450 GB/s | $3.35/h |\n"
        "GB = 1e9 bytes, GiB = 2^30 bytes; memory as CUDA reports it\n");
}

TEST_CASE("GPUs as CSV: bytes, bytes/s and FLOP/s as plain numbers: no price is empty") {
  GpuSpec g = test::h100();
  g.peak_flops.fp8 = 0;  // no fp8 tensor cores: an empty field
  CHECK(reports::gpus_text({g}, reports::TextFormat::csv) ==
        "name,memory_bytes,bandwidth_bytes_per_s,bf16_dense_flops_per_s,fp8_dense_flops_per_s,"
        "interconnect_bytes_per_s,price_per_hour_usd\n"
        "h100-sxm,85029158912,3.35e+12,9.894e+14,,4.5e+11,\n");
}

TEST_CASE("models: a hybrid names its attention, Mamba and linear-attention layers with their counts") {
  // Jamba's plan by hand: 8 layers, attention every 8th from offset 4 (one layer), the
  // other seven Mamba; a Qwen3-Next-like plan: full attention every 4th of 8 (two), the
  // other six Gated DeltaNet (linear attention).
  reports::CatalogModel jamba = llama();
  jamba.model.name = "hybrid";
  jamba.model.num_layers = 8;
  jamba.model.layer_mixer.assign(8, Mixer::mamba1);
  jamba.model.layer_mixer[4] = Mixer::attention;
  CHECK(reports::models_text({jamba}, reports::TextFormat::table).find("GQA in 1 of 8 layers + Mamba in 7") != std::string::npos);
  reports::CatalogModel next = jamba;
  next.model.layer_mixer.assign(8, Mixer::linear_attention);
  next.model.layer_mixer[3] = next.model.layer_mixer[7] = Mixer::attention;
  CHECK(reports::models_text({next}, reports::TextFormat::table).find("GQA in 2 of 8 layers + linear attention in 6") !=
        std::string::npos);
}
