// npy.cpp — .npy reader and writer (see npy.hpp for the supported subset).
//
// File layout (NumPy format spec, numpy/lib/format.py):
//   "\x93NUMPY" major minor | header length (u16 LE for v1, u32 LE for v2/v3) | header | data
// The header is a Python dict literal {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple>},
// padded with spaces and ended by '\n'. This reader parses that literal with a small bounded
// tokenizer (no eval, no recursion), refuses anything else, and checks the data length exactly:
// data shorter than the header promises (truncated) or longer (trailing bytes) is an error.
// Accepted descr strings: '|u1' (also '<u1' and '>u1', byte order meaning nothing for one byte),
// '<f2', '<f4', '<f8'. Big-endian floats ('>f4') are refused with a hint, as is everything else.
// Fortran-order data is transposed to C order on read; writing is always C order, version 1.0.
#include "npy.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "errors.hpp"

namespace nvfp4 {

const char* npy_type_name(NpyType t) {
  switch (t) {
    case NpyType::U8: return "uint8";
    case NpyType::F16: return "float16";
    case NpyType::F32: return "float32";
    case NpyType::F64: return "float64";
  }
  return "?";
}

size_t npy_type_size(NpyType t) {
  switch (t) {
    case NpyType::U8: return 1;
    case NpyType::F16: return 2;
    case NpyType::F32: return 4;
    case NpyType::F64: return 8;
  }
  return 0;
}

static const char* npy_descr(NpyType t) {
  switch (t) {
    case NpyType::U8: return "|u1";
    case NpyType::F16: return "<f2";
    case NpyType::F32: return "<f4";
    case NpyType::F64: return "<f8";
  }
  return "?";
}

int64_t NpyArray::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

constexpr size_t kMaxDims = 3;
constexpr int64_t kMaxDim = int64_t(1) << 48;  // any larger dimension cannot be real data here

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw InputError(name + ": " + what); }

// Printable excerpt of hostile bytes for error messages (bounded, non-printables escaped).
std::string excerpt(const char* p, const char* end) {
  std::string out;
  for (; p < end && out.size() < 40; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (p < end) out += "...";
  return out;
}

// Tokenizer over the header bytes [p, end). Every step checks the bound.
class HeaderParser {
 public:
  HeaderParser(const char* begin, const char* end, const std::string& name) : p_(begin), end_(end), name_(name) {}

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool at_end() const { return p_ >= end_; }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  void expect(char c, const char* what) {
    skip_ws();
    if (p_ >= end_ || *p_ != c) bad(std::string("expected '") + c + "' " + what);
    ++p_;
  }
  bool accept(char c) {
    skip_ws();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // A Python string literal in single or double quotes, without escapes, at most 64 chars.
  std::string string_literal(const char* what) {
    skip_ws();
    if (p_ >= end_ || (*p_ != '\'' && *p_ != '"')) bad(std::string("expected a quoted string for ") + what);
    const char q = *p_++;
    std::string s;
    while (p_ < end_ && *p_ != q) {
      if (*p_ == '\\') bad("escape sequences in header strings are not supported");
      if (s.size() >= 64) bad(std::string(what) + " string is too long");
      s += *p_++;
    }
    if (p_ >= end_) bad("unterminated string in header");
    ++p_;
    return s;
  }

  bool boolean(const char* what) {
    skip_ws();
    if (match_word("True")) return true;
    if (match_word("False")) return false;
    bad(std::string("expected True or False for ") + what);
  }

  // (d0, d1, ...) with non-negative decimal integers; a trailing comma is allowed.
  std::vector<int64_t> shape_tuple() {
    expect('(', "to open the shape tuple");
    std::vector<int64_t> dims;
    if (accept(')')) return dims;
    for (;;) {
      dims.push_back(integer());
      if (dims.size() > 16) bad("shape tuple has too many dimensions");
      if (accept(')')) break;
      expect(',', "between shape dimensions");
      if (accept(')')) break;
    }
    return dims;
  }

  [[noreturn]] void bad(const std::string& what) const {
    fail(name_, "malformed header: " + what + " (at '" + excerpt(p_, end_) + "')");
  }

 private:
  bool match_word(const char* w) {
    const size_t n = std::strlen(w);
    if (size_t(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    const char* after = p_ + n;
    if (after < end_ && (std::isalnum(static_cast<unsigned char>(*after)) || *after == '_')) return false;
    p_ = after;
    return true;
  }

  int64_t integer() {
    skip_ws();
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') bad("expected a non-negative integer in the shape");
    int64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      v = v * 10 + (*p_++ - '0');
      if (v > kMaxDim) bad("shape dimension is too large");
    }
    if (p_ < end_ && *p_ == 'L') ++p_;  // Python 2 long literal, written by old NumPy versions
    return v;
  }

  const char* p_;
  const char* end_;
  const std::string& name_;
};

NpyType parse_descr(const std::string& d, const std::string& name) {
  if (d == "|u1" || d == "<u1" || d == ">u1") return NpyType::U8;
  if (d == "<f2") return NpyType::F16;
  if (d == "<f4") return NpyType::F32;
  if (d == "<f8") return NpyType::F64;
  if (d.size() == 3 && d[0] == '>' && d[1] == 'f')
    fail(name, "big-endian dtype '" + d + "' is not supported; save it little-endian (arr.astype('<" + d.substr(1) +
                   "'))");
  fail(name, "unsupported dtype '" + d + "' (supported: |u1 uint8, <f2 float16, <f4 float32, <f8 float64)");
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10) fail(name, "too short to be a .npy file (" + std::to_string(size) + " bytes)");
  if (std::memcmp(bytes, kMagic, 6) != 0) fail(name, "not a .npy file (the magic string \\x93NUMPY is missing)");
  const int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  size_t header_len, pos;
  if (major == 1) {
    header_len = size_t(bytes[8]) | (size_t(bytes[9]) << 8);
    pos = 10;
  } else {
    if (size < 12) fail(name, "truncated: the header length field is incomplete");
    header_len = size_t(bytes[8]) | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    pos = 12;
  }
  if (header_len > size - pos)
    fail(name, "truncated: the header claims " + std::to_string(header_len) + " bytes, only " +
                   std::to_string(size - pos) + " follow");
  const char* hbeg = reinterpret_cast<const char*>(bytes + pos);
  const char* hend = hbeg + header_len;

  HeaderParser hp(hbeg, hend, name);
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  std::string descr;
  std::vector<int64_t> shape;
  hp.expect('{', "at the start of the header dict");
  while (!hp.accept('}')) {
    const std::string key = hp.string_literal("a header key");
    hp.expect(':', "after a header key");
    if (key == "descr") {
      if (have_descr) hp.bad("duplicate key 'descr'");
      hp.skip_ws();
      if (hp.peek() == '[') fail(name, "structured dtypes (a descr list) are not supported");
      descr = hp.string_literal("descr");
      have_descr = true;
    } else if (key == "fortran_order") {
      if (have_order) hp.bad("duplicate key 'fortran_order'");
      fortran = hp.boolean("fortran_order");
      have_order = true;
    } else if (key == "shape") {
      if (have_shape) hp.bad("duplicate key 'shape'");
      shape = hp.shape_tuple();
      have_shape = true;
    } else {
      hp.bad("unexpected key '" + key + "'");
    }
    if (hp.accept('}')) break;
    hp.expect(',', "between header entries");
  }
  hp.skip_ws();
  if (!hp.at_end()) hp.bad("unexpected text after the header dict");
  if (!have_descr || !have_order || !have_shape)
    fail(name, std::string("malformed header: missing key '") +
                   (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");

  NpyArray arr;
  arr.type = parse_descr(descr, name);
  if (shape.empty() || shape.size() > kMaxDims)
    fail(name, "array has " + std::to_string(shape.size()) + " dimensions " + shape_str(shape) +
                   "; 1 to 3 are supported");
  arr.shape = shape;

  // Data length: overflow-checked product, compared with what the file holds.
  const size_t es = npy_type_size(arr.type);
  const size_t avail = size - pos - header_len;
  size_t need = es;
  bool too_big = false;
  for (int64_t d : shape) {
    if (d != 0 && need > (~size_t(0)) / size_t(d)) too_big = true;
    if (!too_big) need *= size_t(d);
  }
  if (too_big || need > avail)
    fail(name, "truncated: shape " + shape_str(shape) + " of " + npy_type_name(arr.type) + " needs " +
                   (too_big ? std::string("more than 2^64") : std::to_string(need)) + " data bytes, the file has " +
                   std::to_string(avail));
  if (need < avail)
    fail(name, std::to_string(avail - need) + " unexpected bytes after the data of shape " + shape_str(shape));

  const uint8_t* data = bytes + pos + header_len;
  arr.data.resize(need);
  if (!fortran || shape.size() == 1 || need == 0) {
    if (need) std::memcpy(arr.data.data(), data, need);
    return arr;
  }
  // Fortran (column-major) -> C (row-major). Pad the shape to 3-D as (d0, d1, d2).
  const int64_t d0 = shape[0], d1 = shape[1], d2 = shape.size() == 3 ? shape[2] : 1;
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j)
      for (int64_t k = 0; k < d2; ++k) {
        const size_t c_idx = size_t((i * d1 + j) * d2 + k);
        const size_t f_idx = size_t(i + d0 * (j + d1 * k));
        std::memcpy(arr.data.data() + c_idx * es, data + f_idx * es, es);
      }
  return arr;
}

NpyArray read_npy(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<uint8_t> bytes(size_t(st.st_size));
  if (!bytes.empty()) in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
  if (size_t(in.gcount()) != bytes.size()) fail(path, "read error (file changed while reading?)");
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const NpyArray& array) {
  if (array.shape.empty() || array.shape.size() > kMaxDims)
    throw std::invalid_argument(path + ": write_npy needs 1 to 3 dimensions");
  for (int64_t d : array.shape)
    if (d < 0) throw std::invalid_argument(path + ": write_npy: negative dimension");
  if (array.data.size() != size_t(array.count()) * npy_type_size(array.type))
    throw std::invalid_argument(path + ": write_npy: " + std::to_string(array.data.size()) +
                                " data bytes do not match shape " + shape_str(array.shape));
  // Byte-identical to NumPy's np.save (numpy/lib/format.py): the dict, then room for the first
  // dimension to grow to 21 digits, then spaces up to a multiple of 64 bytes (1..64 of them,
  // as NumPy does), then '\n'.
  std::string header = std::string("{'descr': '") + npy_descr(array.type) +
                       "', 'fortran_order': False, 'shape': " + shape_str(array.shape) + ", }";
  const size_t first_digits = std::to_string(array.shape[0]).size();
  header.append(first_digits < 21 ? 21 - first_digits : 0, ' ');
  const size_t pad = 64 - (10 + header.size() + 1) % 64;
  header.append(pad, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) throw std::invalid_argument(path + ": write_npy: header too long");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
  const uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xFF),
                           uint8_t(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(pre), 10);
  out.write(header.data(), std::streamsize(header.size()));
  if (!array.data.empty())
    out.write(reinterpret_cast<const char*>(array.data.data()), std::streamsize(array.data.size()));
  out.close();
  if (!out) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}

}  // namespace nvfp4
