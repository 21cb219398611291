// npy.hpp — reading and writing NumPy .npy files (format versions 1.0, 2.0, 3.0).
//
// Supported element types: uint8 ('|u1' and the other spellings numpy reads as uint8: 'u1', '=u1',
// 'B', ...), int8 ('|i1', ...: the same bytes, for callers that take raw bytes), float16 ('<f2'),
// float32 ('<f4'), float64 ('<f8');
// C and Fortran order; 1 to 3 dimensions. Arrays are returned in C order whatever the file's
// order. Every malformed, truncated or unsupported file throws InputError naming the file and
// the problem; nothing here crashes on hostile bytes (tests/fuzz/fuzz_npy.cpp fuzzes it).
// Reading a file costs what its header promises and no more: the header is parsed and its data
// length compared with the file's size (fstat) before any data is read, a caller can refuse the
// header (its shape, its size) before the data is allocated, and exactly the promised bytes are
// read. Paths are opened through user_file.hpp: a FIFO or device is refused, never waited on.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nvfp4 {

enum class NpyType { U8, I8, F16, F32, F64 };
const char* npy_type_name(NpyType t);  // "uint8", "int8", "float16", ...
size_t npy_type_size(NpyType t);

struct NpyArray {
  NpyType type = NpyType::U8;
  std::vector<int64_t> shape;  // 1..3 dimensions
  std::vector<uint8_t> data;   // element bytes, C order, little-endian
  int64_t count() const;       // product of the shape
};

// What a file's header says, checked against the file's size.
struct NpyHeader {
  NpyType type = NpyType::U8;
  std::vector<int64_t> shape;  // 1..3 dimensions
  bool fortran_order = false;
  size_t data_offset = 0;      // bytes before the data (magic, version, length, header)
  size_t data_bytes = 0;       // exactly what follows the header
  int64_t count() const;
};

// A header's fields as written, parsed but not judged: any descr, 0 to 16 dimensions, the data
// length not compared with the file. For callers that know a file's role and can say what a
// refused dtype or shape should have been (case_dir.cpp); a malformed header still throws.
struct NpyDict {
  std::string descr;  // as written, e.g. "|u1", "<V2"
  bool fortran_order = false;
  std::vector<int64_t> shape;
};
NpyDict read_npy_dict(const std::string& path);
// The element type a descr names, or false when this reader does not support it.
bool npy_descr_type(const std::string& descr, NpyType* type);
// Header text (a descr, a key) as it may appear in a message: one line, non-printables escaped.
std::string npy_printable(const std::string& s);

// Headers longer than this are refused (NumPy writes at most a few hundred bytes).
constexpr size_t kNpyMaxHeaderBytes = size_t(1) << 20;

// Parses the header at the start of `bytes` (`size` of them available) of a file of `file_size`
// bytes; throws InputError unless the data length the header implies is exactly what the file
// holds after it. `size` must cover the header (npy_header_end says how far it reaches).
NpyHeader parse_npy_header(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& name);
// Where the header of a file of `file_size` bytes ends, from its first 12 bytes (fewer when the
// file is shorter): checks the magic, the version and the header length.
size_t npy_header_end(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& name);

// Parses a whole file held in memory; `name` is used in error messages.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name);
// Reads the header alone (no data byte is read).
NpyHeader read_npy_header(const std::string& path);
// Reads a file. `before_data`, when given, sees the checked header before any data is read or
// allocated and may throw to refuse it (a shape the caller cannot use, a size it cannot hold).
NpyArray read_npy(const std::string& path, const std::function<void(const NpyHeader&)>& before_data = {});
// Writes a C-order version 1.0 file. Throws InputError if the path is not a regular file or a new
// one in an existing directory (user_file.hpp), std::runtime_error if the write fails.
void write_npy(const std::string& path, const NpyArray& array);

}  // namespace nvfp4
