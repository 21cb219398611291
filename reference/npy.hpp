// npy.hpp — reading and writing NumPy .npy files (format versions 1.0, 2.0, 3.0).
//
// Supported element types: uint8 ('|u1'), float16 ('<f2'), float32 ('<f4'), float64 ('<f8');
// C and Fortran order; 1 to 3 dimensions. Arrays are returned in C order whatever the file's
// order. Every malformed, truncated or unsupported file throws InputError naming the file and
// the problem; nothing here crashes on hostile bytes (tests/fuzz_npy.cpp fuzzes it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nvfp4 {

enum class NpyType { U8, F16, F32, F64 };
const char* npy_type_name(NpyType t);  // "uint8", "float16", ...
size_t npy_type_size(NpyType t);

struct NpyArray {
  NpyType type = NpyType::U8;
  std::vector<int64_t> shape;  // 1..3 dimensions
  std::vector<uint8_t> data;   // element bytes, C order, little-endian
  int64_t count() const;       // product of the shape
};

// Parses a whole file held in memory; `name` is used in error messages.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name);
NpyArray read_npy(const std::string& path);
// Writes a C-order version 1.0 file. Throws std::runtime_error if the file cannot be written.
void write_npy(const std::string& path, const NpyArray& array);

}  // namespace nvfp4
