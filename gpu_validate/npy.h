// NumPy .npy files (format version 1.0-3.0): enough to read the K/V tensors a user
// dumps with np.save, and to write test fixtures. Little-endian float16/32/64, C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvplan::gv {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // converted to float32, C (row-major) order
  int64_t size() const;
};

//! Reads a .npy file; throws std::runtime_error naming the file and what is wrong
//! (bad magic, unsupported dtype such as '>f4' or '<i8', Fortran order, truncated data).
NpyArray read_npy(const std::string& path);
//! Writes float32 data as a version 1.0 .npy file.
void write_npy(const std::string& path, const std::vector<int64_t>& shape,
               const std::vector<float>& data);

//! IEEE binary16 <-> float (round to nearest even; overflow saturates to +-inf).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
//! f rounded to the nearest fp16 value (how a scale or zero stored as fp16 reads back).
inline float round_to_half(float f) { return half_to_float(float_to_half(f)); }

}  // namespace kvplan::gv
