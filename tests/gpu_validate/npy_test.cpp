#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "gpu_validate/npy.h"

using namespace kvplan::gv;

namespace {
std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}
}  // namespace

TEST_CASE("write_npy then read_npy returns the same shape and values") {
  const std::string path = temp_path("kvplan_gv_test_a.npy");
  const std::vector<float> data = {1.5f, -2.0f, 0.0f, 3.25f, 1e-3f, -7.0f};
  write_npy(path, {2, 3}, data);
  const NpyArray a = read_npy(path);
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.size() == 6);
  CHECK(a.data == data);
  std::filesystem::remove(path);
}

TEST_CASE("read_npy reads a three-dimensional array as [T, H, D]") {
  const std::string path = temp_path("kvplan_gv_test_b.npy");
  std::vector<float> data(2 * 3 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  write_npy(path, {2, 3, 4}, data);
  const NpyArray a = read_npy(path);
  CHECK(a.shape == std::vector<int64_t>{2, 3, 4});
  CHECK(a.data[23] == 23.0f);
  std::filesystem::remove(path);
}

TEST_CASE("read_npy reads float16 data written by hand") {
  // Version 1.0 header for '<f2', shape (3,): 1.0, -2.0, 0.5 as IEEE half bits.
  const std::string path = temp_path("kvplan_gv_test_c.npy");
  std::string header = "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  {
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size() & 0xFF), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out << header;
    const unsigned char halves[6] = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x38};
    out.write(reinterpret_cast<const char*>(halves), 6);
  }
  const NpyArray a = read_npy(path);
  CHECK(a.data == std::vector<float>{1.0f, -2.0f, 0.5f});
  std::filesystem::remove(path);
}

TEST_CASE("read_npy rejects a big-endian dtype and names it") {
  const std::string path = temp_path("kvplan_gv_test_d.npy");
  std::string header = "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  {
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size() & 0xFF), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out << header;
    out.write("\0\0\0\0", 4);
  }
  CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("dtype '>f4' is not supported"), std::runtime_error);
  std::filesystem::remove(path);
}

TEST_CASE("read_npy rejects a file that is not .npy") {
  const std::string path = temp_path("kvplan_gv_test_e.npy");
  { std::ofstream(path) << "hello, world"; }
  CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("bad magic"), std::runtime_error);
  std::filesystem::remove(path);
}

TEST_CASE("float_to_half rounds to nearest even and saturates past 65504") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7C00);   // halfway to the next step: rounds to inf
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3C00);  // tie: even mantissa (1.0)
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3C02);  // tie: even mantissa (1 + 2^-9)
  CHECK(round_to_half(3.5f / 3.0f) == 1.1669921875f);  // 1195 / 1024
  CHECK(half_to_float(0x0001) == doctest::Approx(5.9604644775390625e-8));  // smallest subnormal
  CHECK(float_to_half(5.9604644775390625e-8f) == 0x0001);
}
