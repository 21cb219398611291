// npy.cpp — .npy reader and writer (see npy.hpp for the supported subset).
//
// File layout (NumPy format spec, numpy/lib/format.py):
//   "\x93NUMPY" major minor | header length (u16 LE for v1, u32 LE for v2/v3) | header | data
// The header is a Python dict literal {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple>},
// padded with spaces and ended by '\n'. This reader parses that literal with a small bounded
// tokenizer (no eval, no recursion), refuses anything else, and checks the data length exactly
// against the file's size before any data is read: data shorter than the header promises
// (truncated) or longer (trailing bytes) is an error, and a header longer than 1 MiB is refused.
// Accepted descr strings: '|u1' (also '<u1', '>u1', '=u1', 'u1', 'B' and 'uint8': numpy reads them
// all as uint8, byte order meaning nothing for one byte), the same spellings of int8 ('|i1', 'b',
// ...), '<f2', '<f4', '<f8'. Big-endian floats ('>f4') are refused with a hint, as is everything else.
// Fortran-order data is transposed to C order on read; writing is always C order, version 1.0.
#include "npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>

#include "errors.hpp"
#include "user_file.hpp"

namespace nvfp4 {

const char* npy_type_name(NpyType t) {
  switch (t) {
    case NpyType::U8: return "uint8";
    case NpyType::I8: return "int8";
    case NpyType::F16: return "float16";
    case NpyType::F32: return "float32";
    case NpyType::F64: return "float64";
  }
  return "?";
}

size_t npy_type_size(NpyType t) {
  switch (t) {
    case NpyType::U8: return 1;
    case NpyType::I8: return 1;
    case NpyType::F16: return 2;
    case NpyType::F32: return 4;
    case NpyType::F64: return 8;
  }
  return 0;
}

static const char* npy_descr(NpyType t) {
  switch (t) {
    case NpyType::U8: return "|u1";
    case NpyType::I8: return "|i1";
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

// A header string (a key, a descr) as it may appear in a message: one line, escaped like excerpt().
std::string printable(const std::string& s) { return excerpt(s.data(), s.data() + s.size()); }

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
  NpyType t;
  if (npy_descr_type(d, &t)) return t;
  if (d.size() == 3 && d[0] == '>' && d[1] == 'f')
    fail(name, "big-endian dtype '" + d + "' is not supported; save it little-endian (arr.astype('<" + d.substr(1) +
                   "'))");
  std::string hint;
  if (d.size() >= 2 && (d[0] == '|' || d[0] == '<' || d[0] == '>') && d[1] == 'V')
    hint = "; a void (raw bytes) dtype is what numpy writes for ml_dtypes' float8 and float4 arrays: save "
           "arr.view(np.uint8) (a float4_e2m1fn array holds one code per byte: pack two per byte first, "
           "element 2j in the low nibble)";
  fail(name, "unsupported dtype '" + printable(d) + "' (supported: |u1 uint8, <f2 float16, <f4 float32, <f8 float64)" +
                 hint);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string npy_printable(const std::string& s) { return printable(s); }

bool npy_descr_type(const std::string& d, NpyType* type) {
  // One-byte types, every spelling np.dtype() reads as uint8 or int8: any byte-order mark or none
  // with the kind and size or numpy's one-letter code, or the bare names (np.save writes '|u1' and
  // '|i1' whatever the array was made with; numpy's 'byte' is int8).
  const std::string body = !d.empty() && (d[0] == '|' || d[0] == '<' || d[0] == '>' || d[0] == '=') ? d.substr(1) : d;
  if (body == "u1" || body == "B" || d == "uint8" || d == "ubyte") return *type = NpyType::U8, true;
  if (body == "i1" || body == "b" || d == "int8" || d == "byte") return *type = NpyType::I8, true;
  if (d == "<f2") return *type = NpyType::F16, true;
  if (d == "<f4") return *type = NpyType::F32, true;
  if (d == "<f8") return *type = NpyType::F64, true;
  return false;
}

int64_t NpyHeader::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t npy_header_end(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& name) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (file_size < 10 || size < 10)
    fail(name, "too short to be a .npy file (" + std::to_string(file_size) + " bytes)");
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
    if (file_size < 12 || size < 12) fail(name, "truncated: the header length field is incomplete");
    header_len = size_t(bytes[8]) | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) | (size_t(bytes[11]) << 24);
    pos = 12;
  }
  if (header_len > file_size - pos)
    fail(name, "truncated: the header claims " + std::to_string(header_len) + " bytes, only " +
                   std::to_string(file_size - pos) + " follow");
  if (header_len > kNpyMaxHeaderBytes)
    fail(name, "malformed header: " + std::to_string(header_len) + " header bytes, more than the " +
                   std::to_string(kNpyMaxHeaderBytes) + " this reader accepts");
  return pos + header_len;
}

namespace {

// The header dict of a whole header in memory (npy_header_end checked its extent), not judged.
NpyDict parse_dict(const uint8_t* bytes, size_t end, const std::string& name) {
  const size_t pos = bytes[6] == 1 ? 10 : 12;
  const char* hbeg = reinterpret_cast<const char*>(bytes + pos);
  const char* hend = reinterpret_cast<const char*>(bytes + end);

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
      hp.bad("unexpected key '" + printable(key) + "'");
    }
    if (hp.accept('}')) break;
    hp.expect(',', "between header entries");
  }
  hp.skip_ws();
  if (!hp.at_end()) hp.bad("unexpected text after the header dict");
  if (!have_descr || !have_order || !have_shape)
    fail(name, std::string("malformed header: missing key '") +
                   (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");
  return NpyDict{descr, fortran, shape};
}

}  // namespace

NpyHeader parse_npy_header(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& name) {
  const size_t end = npy_header_end(bytes, size, file_size, name);
  if (size < end) throw std::logic_error(name + ": parse_npy_header needs the whole header in memory");
  const NpyDict dict = parse_dict(bytes, end, name);
  const std::vector<int64_t>& shape = dict.shape;
  const bool fortran = dict.fortran_order;
  NpyHeader h;
  h.type = parse_descr(dict.descr, name);
  if (shape.empty() || shape.size() > kMaxDims)
    fail(name, "array has " + std::to_string(shape.size()) + " dimensions " + shape_str(shape) +
                   "; 1 to 3 are supported");
  h.shape = shape;
  h.fortran_order = fortran;
  h.data_offset = end;

  // Data length: overflow-checked product, compared with what the file holds after the header.
  const uint64_t avail = file_size - end;
  uint64_t need = npy_type_size(h.type);
  bool too_big = false;
  for (int64_t d : shape) {
    if (d != 0 && need > (~uint64_t(0)) / uint64_t(d)) too_big = true;
    if (!too_big) need *= uint64_t(d);
  }
  if (too_big || need > avail)
    fail(name, "truncated: shape " + shape_str(shape) + " of " + npy_type_name(h.type) + " needs " +
                   (too_big ? std::string("more than 2^64") : std::to_string(need)) + " data bytes, the file has " +
                   std::to_string(avail));
  if (need < avail)
    fail(name, std::to_string(avail - need) + " unexpected bytes after the data of shape " + shape_str(shape));
  if (need > uint64_t(~size_t(0))) fail(name, "data of " + std::to_string(need) + " bytes cannot be addressed here");
  h.data_bytes = size_t(need);
  return h;
}

namespace {

// The data bytes as stored (C or Fortran order) -> arr.data in C order.
void store_c_order(const NpyHeader& h, const uint8_t* data, NpyArray& arr) {
  arr.type = h.type;
  arr.shape = h.shape;
  arr.data.resize(h.data_bytes);
  if (!h.fortran_order || h.shape.size() == 1 || h.data_bytes == 0) {
    if (h.data_bytes) std::memcpy(arr.data.data(), data, h.data_bytes);
    return;
  }
  // Fortran (column-major) -> C (row-major). Pad the shape to 3-D as (d0, d1, d2).
  const size_t es = npy_type_size(h.type);
  const int64_t d0 = h.shape[0], d1 = h.shape[1], d2 = h.shape.size() == 3 ? h.shape[2] : 1;
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j)
      for (int64_t k = 0; k < d2; ++k) {
        const size_t c_idx = size_t((i * d1 + j) * d2 + k);
        const size_t f_idx = size_t(i + d0 * (j + d1 * k));
        std::memcpy(arr.data.data() + c_idx * es, data + f_idx * es, es);
      }
}

// The header bytes of an open file (never past them); the file is left positioned at the data.
std::vector<uint8_t> read_header_bytes(UserFile& f) {
  const uint64_t file_size = f.size();
  std::vector<uint8_t> head(size_t(std::min<uint64_t>(file_size, 10)));
  f.read_exact(head.data(), head.size());
  if (head.size() == 10 && head[6] >= 2 && file_size >= 12) {
    head.resize(12);
    f.read_exact(head.data() + 10, 2);
  }
  const size_t end = npy_header_end(head.data(), head.size(), file_size, f.path());
  const size_t have = head.size();
  head.resize(end);
  f.read_exact(head.data() + have, end - have);
  return head;
}

NpyHeader read_header(UserFile& f) {
  const std::vector<uint8_t> head = read_header_bytes(f);
  return parse_npy_header(head.data(), head.size(), f.size(), f.path());
}

}  // namespace

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name) {
  const NpyHeader h = parse_npy_header(bytes, size, size, name);
  NpyArray arr;
  store_c_order(h, bytes + h.data_offset, arr);
  return arr;
}

NpyDict read_npy_dict(const std::string& path) {
  UserFile f = UserFile::open_read(path);
  const std::vector<uint8_t> head = read_header_bytes(f);
  return parse_dict(head.data(), head.size(), f.path());
}

NpyHeader read_npy_header(const std::string& path) {
  UserFile f = UserFile::open_read(path);
  return read_header(f);
}

NpyArray read_npy(const std::string& path, const std::function<void(const NpyHeader&)>& before_data) {
  UserFile f = UserFile::open_read(path);
  const NpyHeader h = read_header(f);
  if (before_data) before_data(h);
  NpyArray arr;
  if (!h.fortran_order || h.shape.size() == 1) {
    arr.type = h.type;
    arr.shape = h.shape;
    arr.data.resize(h.data_bytes);
    f.read_exact(arr.data.data(), h.data_bytes);
    return arr;
  }
  std::vector<uint8_t> stored(h.data_bytes);
  f.read_exact(stored.data(), stored.size());
  store_c_order(h, stored.data(), arr);
  return arr;
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
  UserFile out = UserFile::open_write(path);
  const uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xFF),
                           uint8_t(header.size() >> 8)};
  out.write_all(pre, 10);
  out.write_all(header.data(), header.size());
  out.write_all(array.data.data(), array.data.size());
  out.close();
}

}  // namespace nvfp4
