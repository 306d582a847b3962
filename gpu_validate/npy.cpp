// .npy reader and writer (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#include "gpu_validate/npy.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kvplan::gv {

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  uint32_t bits = 0;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: value = man * 2^-24
      float f = static_cast<float>(man) * 5.9604644775390625e-8f;
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u)  // inf or nan
    return static_cast<uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u));
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (absx < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    float a;
    std::memcpy(&a, &absx, 4);
    const float q = a / 5.9604644775390625e-8f;  // units of 2^-24
    const auto m = static_cast<int32_t>(std::nearbyint(q));  // to nearest, ties to even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  // Normal: rebias exponent, round the 23-bit mantissa to 10 bits, ties to even.
  uint32_t m = absx + 0xC8000000u;  // exponent - 112
  m += 0x0FFFu + ((m >> 13) & 1u);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(m >> 13));
}

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": not a readable .npy file: " + what);
}

std::string dict_value(const std::string& header, const std::string& key) {
  const std::string k = "'" + key + "'";
  const auto p = header.find(k);
  if (p == std::string::npos) return {};
  auto q = header.find(':', p + k.size());
  if (q == std::string::npos) return {};
  ++q;
  while (q < header.size() && header[q] == ' ') ++q;
  if (q >= header.size()) return {};
  if (header[q] == '\'') {
    const auto e = header.find('\'', q + 1);
    return e == std::string::npos ? std::string{} : header.substr(q + 1, e - q - 1);
  }
  if (header[q] == '(') {
    const auto e = header.find(')', q);
    return e == std::string::npos ? std::string{} : header.substr(q, e - q + 1);
  }
  const auto e = header.find_first_of(",}", q);
  return header.substr(q, e - q);
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open it");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "bad magic");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = static_cast<uint32_t>(b[0] | (b[1] << 8));
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) |
                 (static_cast<uint32_t>(b[2]) << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported format version " + std::to_string(major));
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) fail(path, "truncated header");

  const std::string descr = dict_value(header, "descr");
  const std::string fortran = dict_value(header, "fortran_order");
  const std::string shape_s = dict_value(header, "shape");
  if (fortran.find("True") != std::string::npos) fail(path, "Fortran order is not supported");
  int elem_bytes = 0;
  if (descr == "<f4") elem_bytes = 4;
  else if (descr == "<f2") elem_bytes = 2;
  else if (descr == "<f8") elem_bytes = 8;
  else fail(path, "dtype '" + descr + "' is not supported (use float16, float32 or float64, little-endian)");
  if (shape_s.empty() || shape_s.front() != '(') fail(path, "no shape in the header");

  NpyArray a;
  std::string dims = shape_s.substr(1, shape_s.size() - 2);
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" L") == std::string::npos) continue;
    a.shape.push_back(std::stoll(item));
  }
  const int64_t n = a.size();
  std::vector<char> raw(static_cast<size_t>(n * elem_bytes));
  if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size())))
    fail(path, "data is shorter than the shape says");
  a.data.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < a.data.size(); ++i) {
    const char* p = raw.data() + i * static_cast<size_t>(elem_bytes);
    if (elem_bytes == 4) {
      std::memcpy(&a.data[i], p, 4);
    } else if (elem_bytes == 8) {
      double d;
      std::memcpy(&d, p, 8);
      a.data[i] = static_cast<float>(d);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      a.data[i] = half_to_float(h);
    }
  }
  return a;
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape,
               const std::vector<float>& data) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(3, 4)" ; "(3,)" for 1-D
  if (shape.size() > 1) dims.pop_back();
  if (shape.size() == 1) dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write");
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * sizeof(float)));
}

}  // namespace kvplan::gv
