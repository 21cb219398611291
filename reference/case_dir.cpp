// case_dir.cpp — case directories of .npy files <-> Problem (see case_dir.hpp, docs/design.md §1).
//
// Files and shapes (batch-first; 2-D means L = 1; with batch_last the 3-D files are (rows, cols, L)):
//   a.npy (L, M, K/2)  b1.npy, b2.npy (L, N, K/2)  sfa.npy (L, M, K/16)  sfb1.npy, sfb2.npy (L, N, K/16)
// all uint8. K is derived from a.npy (2 * bytes per row); every other file is checked against it,
// and every error names the file that disagrees and what it was compared with. All six headers
// are read and checked before any data is read (read_case_shape stops there), so a case whose
// files disagree or promise more data than they hold costs no more than six small reads.
#include "case_dir.hpp"

#include <filesystem>
#include <stdexcept>

#include "errors.hpp"
#include "layout.hpp"
#include "npy.hpp"
#include "user_file.hpp"

namespace nvfp4 {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw InputError(path + ": " + what); }

std::string join(const std::string& dir, const std::string& file) {
  if (dir.empty()) return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// One uint8 input file: its header's shape read as batch-first (L, rows, cols).
struct Operand {
  std::string path;
  std::vector<int64_t> stored;  // the shape as the file has it
  int64_t L = 1, rows = 0, cols = 0;
};

Operand read_operand(const std::string& dir, const char* file, const char* logical, bool batch_last) {
  Operand op;
  op.path = join(dir, file);
  const NpyHeader h = read_npy_header(op.path);
  if (h.type != NpyType::U8)
    fail(op.path, std::string("dtype ") + npy_type_name(h.type) +
                      ", expected uint8 (the raw bytes; from torch: t.view(torch.uint8).cpu().numpy())");
  const auto& s = h.shape;
  op.stored = s;
  if (s.size() == 2) {
    op.rows = s[0];
    op.cols = s[1];
  } else if (s.size() == 3) {
    if (batch_last) {
      op.rows = s[0];
      op.cols = s[1];
      op.L = s[2];
    } else {
      op.L = s[0];
      op.rows = s[1];
      op.cols = s[2];
    }
  } else {
    fail(op.path, "shape " + shape_str(s) + " has " + std::to_string(s.size()) + " dimension(s); expected " +
                      logical + (batch_last ? " batch-last" : ""));
  }
  if (op.rows < 1 || op.cols < 1 || op.L < 1) fail(op.path, "shape " + shape_str(s) + " has an empty dimension");
  return op;
}

// The data of a file whose header read_operand checked, in batch-first order. The header is read
// again with the data; a file that changed in between is refused before its data is read.
std::vector<uint8_t> read_operand_data(const Operand& op, bool batch_last) {
  NpyArray arr = read_npy(op.path, [&](const NpyHeader& h) {
    if (h.type != NpyType::U8 || h.shape != op.stored)
      fail(op.path, "changed while the case was read (shape " + shape_str(h.shape) + ", was " + shape_str(op.stored) + ")");
  });
  if (op.stored.size() == 3 && batch_last) return batch_last_to_first(arr.data.data(), op.rows, op.cols, op.L, 1);
  return std::move(arr.data);
}

struct CaseHeaders {
  Operand a, b1, b2, sfa, sfb1, sfb2;
  Shape shape;
};

// Reads the six headers (no data) and checks that they describe one problem.
CaseHeaders read_headers(const std::string& dir, bool batch_last) {
  const std::string why = directory_problem(dir, false, false);
  if (!why.empty())
    throw InputError(dir + ": " + why + " (a case directory holds a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy)");
  CaseHeaders c;
  c.a = read_operand(dir, "a.npy", "(L, M, K/2) or (M, K/2)", batch_last);
  c.b1 = read_operand(dir, "b1.npy", "(L, N, K/2) or (N, K/2)", batch_last);
  c.b2 = read_operand(dir, "b2.npy", "(L, N, K/2) or (N, K/2)", batch_last);
  c.sfa = read_operand(dir, "sfa.npy", "(L, M, K/16) or (M, K/16)", batch_last);
  c.sfb1 = read_operand(dir, "sfb1.npy", "(L, N, K/16) or (N, K/16)", batch_last);
  c.sfb2 = read_operand(dir, "sfb2.npy", "(L, N, K/16) or (N, K/16)", batch_last);
  const Operand &a = c.a, &b1 = c.b1, &b2 = c.b2;

  const int64_t L = a.L, M = a.rows, N = b1.rows, K = 2 * a.cols;
  const std::string ks = "K = " + std::to_string(K) + " (from a.npy, " + std::to_string(a.cols) + " bytes per row)";
  if (K % 16 != 0)
    fail(a.path, ks + " is not a multiple of 16 (one E4M3 scale per 16 elements)" +
                     (!batch_last && a.stored.size() == 3
                          ? std::string("; read batch-first as (L, M, K/2): if the file is (M, K/2, L) (GPU MODE's "
                                        "order), pass --batch-last")
                          : std::string()));
  // A scale file holding exactly as many bytes as the 128 x 4 blocked layout of its matrix (§1.4) was
  // most likely saved in that layout: say so wherever its shape is refused.
  auto blocked_hint = [&](const Operand& sf, int64_t rows) {
    const int64_t blocked = L * ((rows + 127) / 128) * ((K / 16 + 3) / 4) * 512;
    if (K % 16 != 0 || sf.L * sf.rows * sf.cols != blocked || (sf.rows == rows && sf.cols == K / 16)) return std::string();
    return "; its " + std::to_string(blocked) + " bytes are the 128x4 blocked layout's (docs/design.md §1.4): save the "
           "plain (L, rows, K/16) layout (nvfp4_dual.from_blocked converts)";
  };
  auto scale_rows = [&](const Operand* op) { return op == &c.sfa ? M : N; };
  for (const Operand* op : {&c.b1, &c.b2, &c.sfa, &c.sfb1, &c.sfb2})
    if (op->L != L)
      fail(op->path, "L = " + std::to_string(op->L) + " but a.npy has L = " + std::to_string(L) +
                         (batch_last ? " (batch-last order)" : " (batch-first order; pass batch_last for (rows, cols, L))") +
                         (op == &c.b1 || op == &c.b2 ? std::string() : blocked_hint(*op, scale_rows(op))));
  for (const Operand* op : {&b1, &b2})
    if (op->cols != a.cols)
      fail(op->path, std::to_string(op->cols) + " bytes per row (K = " + std::to_string(2 * op->cols) + "), but " + ks);
  if (b2.rows != N)
    fail(b2.path, "N = " + std::to_string(b2.rows) + " rows, but b1.npy has N = " + std::to_string(N));
  auto check_sf = [&](const Operand& sf, int64_t rows, const char* rows_from) {
    if (sf.rows != rows)
      fail(sf.path, std::to_string(sf.rows) + " rows, but " + rows_from + " has " + std::to_string(rows) +
                        blocked_hint(sf, rows));
    if (sf.cols != K / 16)
      fail(sf.path, std::to_string(sf.cols) + " scales per row, but " + ks + " needs K/16 = " + std::to_string(K / 16) +
                        blocked_hint(sf, rows));
  };
  check_sf(c.sfa, M, "a.npy");
  check_sf(c.sfb1, N, "b1.npy");
  check_sf(c.sfb2, N, "b1.npy");

  c.shape.M = M;
  c.shape.N = N;
  c.shape.K = K;
  c.shape.L = L;
  try {
    c.shape.validate();
  } catch (const InputError& e) {
    throw InputError(dir + ": " + e.what());
  }
  return c;
}

}  // namespace

Shape read_case_shape(const std::string& dir, bool batch_last) { return read_headers(dir, batch_last).shape; }

Problem load_case(const std::string& dir, bool batch_last) {
  const CaseHeaders c = read_headers(dir, batch_last);
  Problem p;
  p.shape = c.shape;
  p.a = read_operand_data(c.a, batch_last);
  p.b1 = read_operand_data(c.b1, batch_last);
  p.b2 = read_operand_data(c.b2, batch_last);
  p.sfa = read_operand_data(c.sfa, batch_last);
  p.sfb1 = read_operand_data(c.sfb1, batch_last);
  p.sfb2 = read_operand_data(c.sfb2, batch_last);
  p.validate();  // sizes follow from the checks above; this is a last guard
  return p;
}

void save_case(const std::string& dir, const Problem& p) {
  p.validate();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
  const Shape& s = p.shape;
  auto write = [&](const char* file, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
    NpyArray arr;
    arr.type = NpyType::U8;
    arr.shape = s.L == 1 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{s.L, rows, cols};
    arr.data = bytes;
    write_npy(join(dir, file), arr);
  };
  write("a.npy", p.a, s.M, s.K / 2);
  write("b1.npy", p.b1, s.N, s.K / 2);
  write("b2.npy", p.b2, s.N, s.K / 2);
  write("sfa.npy", p.sfa, s.M, s.K / 16);
  write("sfb1.npy", p.sfb1, s.N, s.K / 16);
  write("sfb2.npy", p.sfb2, s.N, s.K / 16);
}

std::vector<uint16_t> load_output(const std::string& path, const Shape& shape, bool batch_last) {
  // The header is checked before any data is read: a wrong or huge shape costs nothing.
  NpyArray arr = read_npy(path, [&](const NpyHeader& h) {
    if (h.type != NpyType::F16)
      fail(path, std::string("dtype ") + npy_type_name(h.type) + ", expected float16 (the kernel's fp16 output)");
    const auto& s = h.shape;
    const std::vector<int64_t> want_first{shape.L, shape.M, shape.N}, want_last{shape.M, shape.N, shape.L};
    const std::vector<int64_t> want2{shape.M, shape.N};
    const bool ok = (shape.L == 1 && s == want2) || s == (batch_last ? want_last : want_first);
    if (!ok)
      fail(path, "shape " + shape_str(s) + " does not match the problem " + shape.str() + ": expected " +
                     shape_str(batch_last ? want_last : want_first) +
                     (shape.L == 1 ? " or " + shape_str(want2) : std::string()) +
                     (batch_last ? " (batch-last)" : ""));
  });
  const auto& s = arr.shape;
  std::vector<uint8_t> bytes = std::move(arr.data);
  if (s.size() == 3 && batch_last) bytes = batch_last_to_first(bytes.data(), shape.M, shape.N, shape.L, 2);
  std::vector<uint16_t> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint16_t(bytes[2 * i] | (bytes[2 * i + 1] << 8));  // little-endian
  return out;
}

void save_output(const std::string& path, const Shape& shape, const std::vector<uint16_t>& c) {
  if (int64_t(c.size()) != shape.c_elems())
    throw std::invalid_argument(path + ": save_output: " + std::to_string(c.size()) + " values, shape " + shape.str() +
                                " needs " + std::to_string(shape.c_elems()));
  NpyArray arr;
  arr.type = NpyType::F16;
  arr.shape = shape.L == 1 ? std::vector<int64_t>{shape.M, shape.N} : std::vector<int64_t>{shape.L, shape.M, shape.N};
  arr.data.resize(c.size() * 2);
  for (size_t i = 0; i < c.size(); ++i) {
    arr.data[2 * i] = uint8_t(c[i] & 0xFF);
    arr.data[2 * i + 1] = uint8_t(c[i] >> 8);
  }
  write_npy(path, arr);
}

}  // namespace nvfp4
