// kvplan planner: what buying a GPU type costs and draws, and the server it ships in.
// Catalog data (configs/servers/<gpu>.yaml, loaded by io/hardware_io.h), beside GpuSpec,
// which describes the same GPU's performance. Standard library only.
#pragma once

#include <cstdint>
#include <string>

namespace kvplan {

struct ServerSpec {
  std::string gpu;                     // GpuSpec::name this purchase data belongs to
  std::string form;                    // in words, e.g. "HGX H100 8-GPU baseboard (SXM5, NVSwitch)"
  double gpu_price_usd = 0;            // per GPU, indicative (list or street), not a quote
  double gpu_board_power_w = 0;        // TDP / board power: what a busy GPU draws at most
  double gpu_idle_power_w = 0;         // drawn by an idle GPU with its memory loaded
  int64_t gpus_per_server = 0;
  bool whole_server = false;           // baseboards (HGX, OAM) ship fully populated
  double server_price_usd = 0;         // the server without its GPUs
  double server_power_w = 0;           // the server without its GPUs, at full load
  int64_t server_rack_units = 0;       // height in U
  bool tp_across_servers = false;      // the GPU fabric (e.g. NVLink Switch) spans servers
  bool liquid_cooled = false;          // needs liquid cooling (cooling: liquid), e.g. an NVL72 rack
  int64_t host_memory_bytes = 0;       // the server's CPU DRAM (a host KV tier lives in it)
  //! The most DRAM the server takes (a datasheet's "upgradable to"); 0: not stated, so the
  //! installed DRAM is the most. `size --buy` buys DIMMs up to it for a host KV tier.
  int64_t host_memory_max_bytes = 0;
  std::string file;                    // where it was read from, for messages
};

}  // namespace kvplan
