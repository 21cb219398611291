// test_npy.cpp — .npy reading and writing (reference/npy.hpp) and case directories (case_dir.hpp).
//
// Files are built byte by byte in the test (magic, version, header length, header text, data),
// so each accepted or refused feature is exercised on purpose; two files reproduce bytes that
// NumPy 2.4.6's np.save wrote (header text and padding length recorded below).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "layout.hpp"
#include "npy.hpp"

using namespace nvfp4;
namespace fs = std::filesystem;

namespace {

// magic + version + little-endian header length (2 bytes for v1, 4 for v2/v3) + header + data.
std::vector<uint8_t> npy_bytes(int major, const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  const size_t n = header.size();
  out.push_back(uint8_t(n & 0xFF));
  out.push_back(uint8_t((n >> 8) & 0xFF));
  if (major >= 2) {
    out.push_back(uint8_t((n >> 16) & 0xFF));
    out.push_back(uint8_t((n >> 24) & 0xFF));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> iota_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i + 1);
  return v;
}

NpyArray parse(const std::vector<uint8_t>& b) { return parse_npy(b.data(), b.size(), "t.npy"); }

// Parses and expects an InputError whose message starts with the name and contains `phrase`.
void expect_error(const std::vector<uint8_t>& b, const std::string& phrase) {
  try {
    parse(b);
    FAIL("no error; expected one mentioning '" << phrase << "'");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(msg.rfind("t.npy: ", 0) == 0);
    CHECK(msg.find(phrase) != std::string::npos);
  }
}

std::string hdr(const std::string& descr, const std::string& fortran, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/nvfp4_test_npy_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str(const std::string& f = "") const { return f.empty() ? path.string() : (path / f).string(); }
};

void write_file(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void save_u8(const std::string& path, std::vector<int64_t> shape, const std::vector<uint8_t>& data) {
  NpyArray a;
  a.type = NpyType::U8;
  a.shape = std::move(shape);
  a.data = data;
  write_npy(path, a);
}

}  // namespace

TEST_CASE("npy: files written by NumPy parse, and write_npy reproduces them byte for byte") {
  // np.save(f, np.array([[1,2,3],[4,5,6]], np.uint8)) with NumPy 2.4.6: header length 0x76,
  // the dict below, 58 spaces, '\n', then the 6 data bytes.
  const std::string h1 = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }" + std::string(58, ' ') + "\n";
  const std::vector<uint8_t> f1 = npy_bytes(1, h1, {1, 2, 3, 4, 5, 6});
  REQUIRE(h1.size() == 0x76);
  NpyArray a = parse(f1);
  CHECK(a.type == NpyType::U8);
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.count() == 6);
  CHECK(a.data == std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  // np.save(f, np.array([1.0, -2.0, 65504], np.float16)): 60 spaces, data 003c 00c0 ff7b.
  const std::string h2 = "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }" + std::string(60, ' ') + "\n";
  const std::vector<uint8_t> f2 = npy_bytes(1, h2, {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b});
  NpyArray b = parse(f2);
  CHECK(b.type == NpyType::F16);
  CHECK(b.shape == std::vector<int64_t>{3});
  CHECK(b.data.size() == 6);

  TempDir dir;
  write_npy(dir.str("a.npy"), a);
  CHECK(read_file(dir.str("a.npy")) == f1);
  write_npy(dir.str("b.npy"), b);
  CHECK(read_file(dir.str("b.npy")) == f2);
}

TEST_CASE("npy: write/read round trip for every type, 1 to 3 dims") {
  TempDir dir;
  const NpyType types[] = {NpyType::U8, NpyType::F16, NpyType::F32, NpyType::F64};
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 5}, {2, 3, 4}, {0, 4}, {1, 1, 1}, {123456, 1}};
  for (NpyType t : types)
    for (const auto& shape : shapes) {
      NpyArray a;
      a.type = t;
      a.shape = shape;
      a.data = iota_bytes(size_t(a.count()) * npy_type_size(t));
      const std::string path = dir.str("x.npy");
      write_npy(path, a);
      const auto bytes = read_file(path);
      CHECK((bytes.size() - a.data.size()) % 64 == 0);  // header padded to 64-byte alignment
      NpyArray back = read_npy(path);
      CHECK(back.type == t);
      CHECK(back.shape == shape);
      CHECK(back.data == a.data);
    }
  CHECK(std::string(npy_type_name(NpyType::F32)) == "float32");
  CHECK(npy_type_size(NpyType::F64) == 8);
}

TEST_CASE("npy: versions 2.0 and 3.0, header spellings") {
  const auto data = iota_bytes(12);
  for (int v : {1, 2, 3}) {
    NpyArray a = parse(npy_bytes(v, hdr("|u1", "False", "(3, 4)"), data));
    CHECK(a.shape == std::vector<int64_t>{3, 4});
    CHECK(a.data == data);
  }
  // Double quotes, other key order, no trailing comma, no padding, tabs, Python 2 long ints.
  CHECK(parse(npy_bytes(1, "{\"shape\": (3, 4), \"descr\": \"<u1\", \"fortran_order\": False}", data)).shape ==
        std::vector<int64_t>{3, 4});
  CHECK(parse(npy_bytes(1, "{'fortran_order':False,'shape':(12,),'descr':'|u1'}", data)).shape ==
        std::vector<int64_t>{12});
  CHECK(parse(npy_bytes(1, "{\t'descr' : '|u1' ,\n 'fortran_order' : False , 'shape' : ( 2 , 6 ) }  \n", data)).shape ==
        std::vector<int64_t>{2, 6});
  CHECK(parse(npy_bytes(1, hdr("|u1", "False", "(2L, 6L)"), data)).shape == std::vector<int64_t>{2, 6});
  CHECK(parse(npy_bytes(1, hdr(">u1", "False", "(12,)"), data)).type == NpyType::U8);  // byte order moot
  CHECK(parse(npy_bytes(1, hdr("<f4", "False", "(3,)"), data)).type == NpyType::F32);
  CHECK(parse(npy_bytes(1, hdr("<f8", "False", "(1, 1, 1)"), std::vector<uint8_t>(8))).type == NpyType::F64);
}

TEST_CASE("npy: Fortran order is transposed to C order") {
  // 2-D (2, 3) of u8: column-major bytes are a00 a10 a01 a11 a02 a12.
  const std::vector<uint8_t> f2d = {0, 10, 1, 11, 2, 12};
  NpyArray a = parse(npy_bytes(1, hdr("|u1", "True", "(2, 3)"), f2d));
  CHECK(a.data == std::vector<uint8_t>{0, 1, 2, 10, 11, 12});
  // 3-D (2, 3, 4) of f2: element (i, j, k) holds the 16-bit value 100*i + 10*j + k, stored at
  // Fortran index i + 2*(j + 3*k).
  std::vector<uint8_t> f3d(2 * 3 * 4 * 2);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const int v = 100 * i + 10 * j + k, at = 2 * (i + 2 * (j + 3 * k));
        f3d[at] = uint8_t(v & 0xFF);
        f3d[at + 1] = uint8_t(v >> 8);
      }
  NpyArray b = parse(npy_bytes(2, hdr("<f2", "True", "(2, 3, 4)"), f3d));
  REQUIRE(b.shape == std::vector<int64_t>{2, 3, 4});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const int at = 2 * ((i * 3 + j) * 4 + k);
        CHECK((b.data[at] | (b.data[at + 1] << 8)) == 100 * i + 10 * j + k);
      }
  // 1-D Fortran is the same as C.
  CHECK(parse(npy_bytes(1, hdr("|u1", "True", "(6,)"), f2d)).data == f2d);
}

TEST_CASE("npy: malformed, truncated and unsupported files give clear errors") {
  const auto d12 = iota_bytes(12);
  const auto good = npy_bytes(1, hdr("|u1", "False", "(3, 4)"), d12);
  SUBCASE("framing") {
    expect_error({}, "too short");
    expect_error(std::vector<uint8_t>(good.begin(), good.begin() + 9), "too short");
    auto bad_magic = good;
    bad_magic[1] = 'X';
    expect_error(bad_magic, "not a .npy file");
    auto v4 = good;
    v4[6] = 4;
    expect_error(v4, "version 4.0");
    auto v11 = good;
    v11[7] = 1;
    expect_error(v11, "version 1.1");
    auto long_header = good;
    long_header[9] = 0x7F;
    expect_error(long_header, "truncated");
    expect_error(std::vector<uint8_t>(good.begin(), good.begin() + 11), "truncated");
  }
  SUBCASE("data length") {
    expect_error(std::vector<uint8_t>(good.begin(), good.end() - 1), "truncated");
    auto extra = good;
    extra.push_back(0);
    expect_error(extra, "unexpected bytes after the data");
    expect_error(npy_bytes(1, hdr("<f8", "False", "(99999999999, 99999999999, 99999999999)"), d12), "truncated");
    expect_error(npy_bytes(1, hdr("<f8", "False", "(99999999999999999999,)"), d12), "too large");
  }
  SUBCASE("dtypes") {
    expect_error(npy_bytes(1, hdr(">f4", "False", "(3,)"), d12), "big-endian");
    expect_error(npy_bytes(1, hdr(">f2", "False", "(6,)"), d12), "big-endian");
    expect_error(npy_bytes(1, hdr("<i4", "False", "(3,)"), d12), "unsupported dtype '<i4'");
    expect_error(npy_bytes(1, hdr("|b1", "False", "(12,)"), d12), "unsupported dtype");
    expect_error(npy_bytes(1, hdr("=f4", "False", "(3,)"), d12), "unsupported dtype");
    expect_error(npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", d12),
                 "structured");
  }
  SUBCASE("dimensions") {
    expect_error(npy_bytes(1, hdr("|u1", "False", "()"), {1}), "0 dimensions");
    expect_error(npy_bytes(1, hdr("|u1", "False", "(1, 2, 2, 3)"), d12), "4 dimensions");
    expect_error(npy_bytes(1, hdr("|u1", "False", "(-3, 4)"), d12), "non-negative integer");
  }
  SUBCASE("header dict") {
    expect_error(npy_bytes(1, "", d12), "expected '{'");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'fortran_order': False}", d12), "missing key 'shape'");
    expect_error(npy_bytes(1, "{'fortran_order': False, 'shape': (12,)}", d12), "missing key 'descr'");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'shape': (12,)}", d12), "missing key 'fortran_order'");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (12,)}", d12),
                 "duplicate key");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (12,), 'x': 1}", d12),
                 "unexpected key 'x'");
    expect_error(npy_bytes(1, hdr("|u1", "Maybe", "(12,)"), d12), "True or False");
    expect_error(npy_bytes(1, hdr("|u1", "Falsehood", "(12,)"), d12), "True or False");
    expect_error(npy_bytes(1, "{'descr': '|u1, 'fortran_order': False, 'shape': (12,)}", d12), "malformed header");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (12,)} junk", d12),
                 "unexpected text after the header");
    expect_error(npy_bytes(1, "{'descr': '\\x7cu1', 'fortran_order': False, 'shape': (12,)}", d12), "escape");
    expect_error(npy_bytes(1, "{'descr': '|u1' 'fortran_order': False, 'shape': (12,)}", d12), "expected ','");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (12,", d12), "malformed header");
    expect_error(npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3 4)}", d12), "malformed header");
    expect_error(npy_bytes(1, "{'descr': '" + std::string(100, 'a') + "', 'fortran_order': False, 'shape': (12,)}", d12),
                 "too long");
  }
}

TEST_CASE("npy: read_npy errors name the path") {
  TempDir dir;
  try {
    read_npy(dir.str("missing.npy"));
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(dir.str("missing.npy") + ": cannot open") == 0);
  }
  CHECK_THROWS_WITH_AS(read_npy(dir.str()), doctest::Contains("not a regular file"), InputError);
  write_file(dir.str("short.npy"), {0x93, 'N'});
  CHECK_THROWS_WITH_AS(read_npy(dir.str("short.npy")), doctest::Contains("short.npy: too short"), InputError);
  NpyArray bad;
  bad.shape = {2, 2};
  bad.data = {1, 2, 3};
  CHECK_THROWS(write_npy(dir.str("bad.npy"), bad));
  NpyArray ok;
  ok.shape = {1};
  ok.data = {1};
  CHECK_THROWS_AS(write_npy(dir.str("no/such/dir/x.npy"), ok), std::runtime_error);
}

TEST_CASE("case dir: save/load round trip, batch-first and batch-last") {
  TempDir dir;
  for (const Shape& s : {Shape{3, 5, 32, 1}, Shape{7, 2, 48, 3}}) {
    const Problem p = make_problem(s, "uniform", 11);
    const std::string d = dir.str("case_" + s.str());
    save_case(d, p);
    const Problem q = load_case(d);
    CHECK(q.shape == s);
    CHECK(q.a == p.a);
    CHECK(q.b1 == p.b1);
    CHECK(q.b2 == p.b2);
    CHECK(q.sfa == p.sfa);
    CHECK(q.sfb1 == p.sfb1);
    CHECK(q.sfb2 == p.sfb2);
    CHECK(read_npy(d + "/a.npy").shape.size() == (s.L == 1 ? 2u : 3u));
    // The same problem written batch-last, (rows, cols, L), loads only when asked for.
    const std::string dl = dir.str("last_" + s.str());
    fs::create_directories(dl);
    save_u8(dl + "/a.npy", {s.M, s.K / 2, s.L}, batch_first_to_last(p.a.data(), s.M, s.K / 2, s.L, 1));
    save_u8(dl + "/b1.npy", {s.N, s.K / 2, s.L}, batch_first_to_last(p.b1.data(), s.N, s.K / 2, s.L, 1));
    save_u8(dl + "/b2.npy", {s.N, s.K / 2, s.L}, batch_first_to_last(p.b2.data(), s.N, s.K / 2, s.L, 1));
    save_u8(dl + "/sfa.npy", {s.M, s.K / 16, s.L}, batch_first_to_last(p.sfa.data(), s.M, s.K / 16, s.L, 1));
    save_u8(dl + "/sfb1.npy", {s.N, s.K / 16, s.L}, batch_first_to_last(p.sfb1.data(), s.N, s.K / 16, s.L, 1));
    save_u8(dl + "/sfb2.npy", {s.N, s.K / 16, s.L}, batch_first_to_last(p.sfb2.data(), s.N, s.K / 16, s.L, 1));
    const Problem r = load_case(dl, /*batch_last=*/true);
    CHECK(r.shape == s);
    CHECK(r.a == p.a);
    CHECK(r.b2 == p.b2);
    CHECK(r.sfa == p.sfa);
    CHECK(r.sfb1 == p.sfb1);
    if (s.L > 1) CHECK_THROWS_AS(load_case(dl), InputError);  // read batch-first, the shapes disagree
  }
}

TEST_CASE("case dir: every inconsistency names the file") {
  TempDir dir;
  const Shape s{4, 6, 32, 2};
  const Problem p = make_problem(s, "normal", 3);
  auto fresh = [&](const std::string& name) {
    const std::string d = dir.str(name);
    save_case(d, p);
    return d;
  };
  auto expect = [](const std::string& d, const std::string& file, const std::string& phrase, bool bl = false) {
    try {
      load_case(d, bl);
      FAIL("no error for " << file);
    } catch (const InputError& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find(file) != std::string::npos);
      CHECK(msg.find(phrase) != std::string::npos);
    }
  };
  {
    const std::string d = fresh("missing");
    fs::remove(d + "/sfb2.npy");
    expect(d, "sfb2.npy", "cannot open");
  }
  expect(dir.str("no_such_dir"), "no_such_dir", "not a directory");
  {
    const std::string d = fresh("dtype");
    NpyArray f;
    f.type = NpyType::F32;
    f.shape = {s.L, s.N, s.K / 8};  // same byte count as uint8 (L, N, K/2)
    f.data.assign(size_t(s.L * s.N * s.K / 2), 0);
    write_npy(d + "/b1.npy", f);
    expect(d, "b1.npy", "dtype float32, expected uint8");
  }
  {
    const std::string d = fresh("kmismatch");
    save_u8(d + "/sfa.npy", {s.L, s.M, 3}, std::vector<uint8_t>(size_t(s.L * s.M * 3), 0x38));
    expect(d, "sfa.npy", "needs K/16 = 2");
  }
  {
    const std::string d = fresh("b2rows");
    save_u8(d + "/b2.npy", {s.L, s.N + 1, s.K / 2}, std::vector<uint8_t>(size_t(s.L * (s.N + 1) * s.K / 2)));
    expect(d, "b2.npy", "but b1.npy has N = 6");
  }
  {
    const std::string d = fresh("b2cols");
    save_u8(d + "/b2.npy", {s.L, s.N, s.K / 2 + 8}, std::vector<uint8_t>(size_t(s.L * s.N * (s.K / 2 + 8))));
    expect(d, "b2.npy", "bytes per row");
  }
  {
    const std::string d = fresh("k24");
    save_u8(d + "/a.npy", {s.L, s.M, 12}, std::vector<uint8_t>(size_t(s.L * s.M * 12)));
    expect(d, "a.npy", "K = 24");
    expect(d, "a.npy", "not a multiple of 16");
  }
  {
    const std::string d = fresh("lmismatch");
    save_u8(d + "/sfb1.npy", {s.N, s.K / 16}, std::vector<uint8_t>(size_t(s.N * s.K / 16)));  // 2-D: L = 1
    expect(d, "sfb1.npy", "L = 1 but a.npy has L = 2");
  }
  {
    const std::string d = fresh("sfarows");
    save_u8(d + "/sfa.npy", {s.L, s.M - 1, s.K / 16}, std::vector<uint8_t>(size_t(s.L * (s.M - 1) * s.K / 16)));
    expect(d, "sfa.npy", "rows, but a.npy has 4");
  }
  {
    const std::string d = fresh("onedim");
    save_u8(d + "/a.npy", {s.L * s.M * s.K / 2}, std::vector<uint8_t>(size_t(s.L * s.M * s.K / 2)));
    expect(d, "a.npy", "1 dimension");
  }
  {
    const std::string d = fresh("empty");
    save_u8(d + "/b1.npy", {s.L, 0, s.K / 2}, {});
    expect(d, "b1.npy", "empty dimension");
  }
  {
    const std::string d = fresh("garbage");
    write_file(d + "/sfb1.npy", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
    expect(d, "sfb1.npy", "not a .npy file");
  }
}

TEST_CASE("case dir: outputs (fp16) load and save, with shape checks") {
  TempDir dir;
  const Shape s{3, 4, 16, 2};
  std::vector<uint16_t> c(size_t(s.c_elems()));
  for (size_t i = 0; i < c.size(); ++i) c[i] = uint16_t(0x3C00 + i * 3);
  const std::string path = dir.str("c.npy");
  save_output(path, s, c);
  CHECK(read_npy(path).shape == std::vector<int64_t>{2, 3, 4});
  CHECK(load_output(path, s) == c);
  CHECK_THROWS_WITH_AS(load_output(path, Shape{3, 4, 16, 3}), doctest::Contains("c.npy: shape (2, 3, 4)"),
                       InputError);
  CHECK_THROWS_AS(load_output(path, Shape{4, 3, 16, 2}), InputError);
  // Batch-last output (M, N, L).
  NpyArray bl;
  bl.type = NpyType::F16;
  bl.shape = {s.M, s.N, s.L};
  std::vector<uint8_t> bytes(c.size() * 2);
  for (size_t i = 0; i < c.size(); ++i) {
    bytes[2 * i] = uint8_t(c[i] & 0xFF);
    bytes[2 * i + 1] = uint8_t(c[i] >> 8);
  }
  bl.data = batch_first_to_last(bytes.data(), s.M, s.N, s.L, 2);
  write_npy(dir.str("cl.npy"), bl);
  CHECK(load_output(dir.str("cl.npy"), s, true) == c);
  CHECK_THROWS_AS(load_output(dir.str("cl.npy"), s, false), InputError);
  // L = 1 accepts (M, N) and (1, M, N); a uint8 file is refused.
  const Shape s1{3, 4, 16, 1};
  std::vector<uint16_t> c1(c.begin(), c.begin() + 12);
  save_output(dir.str("c1.npy"), s1, c1);
  CHECK(read_npy(dir.str("c1.npy")).shape == std::vector<int64_t>{3, 4});
  CHECK(load_output(dir.str("c1.npy"), s1) == c1);
  NpyArray c13;
  c13.type = NpyType::F16;
  c13.shape = {1, 3, 4};
  c13.data = read_npy(dir.str("c1.npy")).data;
  write_npy(dir.str("c13.npy"), c13);
  CHECK(load_output(dir.str("c13.npy"), s1) == c1);
  save_u8(dir.str("u8.npy"), {3, 8}, std::vector<uint8_t>(24));
  CHECK_THROWS_WITH_AS(load_output(dir.str("u8.npy"), s1), doctest::Contains("dtype uint8, expected float16"),
                       InputError);
  CHECK_THROWS(save_output(dir.str("x.npy"), s, c1));
}
