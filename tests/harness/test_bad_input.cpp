// test_bad_input.cpp — the harness refuses bad input up front (harness/cli/cli_checks.hpp).
//
// Length: about 665 lines, over the project's ~600: one table per kind of input (files, options,
// modes, stages), sharing the row checker below; a row is one line, and splitting the tables apart
// would repeat the checker.
//
// A table of bad inputs, each run through the REAL harness binary as a child with a kill timer
// (harness_cli::run_argv), so a harness that hangs on a FIFO or allocates for minutes fails a row
// instead of hanging ctest. Every row asserts: exit code 2; the output is one line; it names the
// offender (an option or a file) and says what is wrong (two substrings); and it came within
// kLimit seconds of wall time. The files are written by the test into a private temp directory:
// malformed .npy headers of many kinds, wrong dtypes and shapes, disagreeing case files,
// truncated and oversized data, sparse files of 3 GB and 100 GB (no disk blocks), FIFOs,
// sockets, devices, directories and dangling links where files belong. A second test calls the
// library directly on FIFOs (the .npy writer, the report writer, autotune's disk cache): each
// must refuse, naming the type, and never wait for a reader or writer.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "case_dir.hpp"
#include "distributions.hpp"
#include "errors.hpp"
#include "harness_cli.hpp"
#include "npy.hpp"
#include "registry.hpp"
#include "user_file.hpp"

using namespace nvfp4;
using namespace std::string_literals;  // "..."s keeps embedded NUL bytes
namespace fs = std::filesystem;

namespace {

constexpr double kLimit = 2.0;     // seconds a refusal may take (a second, with slack for a loaded CI)
constexpr double kTimeout = 10.0;  // past this the child is killed and the row fails

struct Row {
  std::string what;               // the bad input, for the failure message
  std::vector<std::string> args;  // exactly the harness's arguments
  std::string offender;           // names the option or file
  std::string reason;             // says what is wrong
};

// A .npy file built byte by byte: magic, version, header length, header (padded like NumPy to a
// multiple of 64 with a final '\n' when `pad`), data.
std::string npy(int major, const std::string& dict, size_t data_bytes, bool pad = true, int minor = 0) {
  std::string header = dict;
  const size_t pre = major == 1 ? 10 : 12;
  if (pad) {
    header.append((64 - (pre + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
  }
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(minor);
  const size_t n = header.size();
  out += char(n & 0xFF);
  out += char((n >> 8) & 0xFF);
  if (major != 1) {
    out += char((n >> 16) & 0xFF);
    out += char((n >> 24) & 0xFF);
  }
  return out + header + std::string(data_bytes, '\x22');
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

// `bytes`, then a hole up to `total` bytes (a sparse file: no disk blocks for the hole).
void write_sparse(const std::string& path, const std::string& bytes, uint64_t total) {
  write_bytes(path, bytes);
  REQUIRE(truncate(path.c_str(), off_t(total)) == 0);
}

void make_fifo(const std::string& path) { REQUIRE(mkfifo(path.c_str(), 0644) == 0); }

void make_socket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  close(fd);  // the socket file stays
}

// Case directories under one temp root: a valid case (M = 4, N = 8, K = 32, L = 1) of which one
// file is then replaced. Shapes of the valid files: a (4, 16), b1/b2 (8, 16), sfa (4, 2), sfb (8, 2).
struct Files {
  std::string root = harness_cli::temp_dir();
  int next = 0;

  std::string path(const std::string& name) const { return root + "/" + name; }

  std::string valid_case() {
    const std::string d = path("case" + std::to_string(next++));
    save_case(d, make_problem(Shape{4, 8, 32, 1}, "normal", 1));
    return d;
  }
  // A valid case whose `file` is then made by `make(path)` (after removing the valid one).
  std::string case_with(const std::string& file, const std::function<void(const std::string&)>& make) {
    const std::string d = valid_case();
    fs::remove(d + "/" + file);
    make(d + "/" + file);
    return d;
  }
  std::string case_with_bytes(const std::string& file, const std::string& bytes) {
    return case_with(file, [&](const std::string& p) { write_bytes(p, bytes); });
  }
};

std::vector<Row> case_file_rows(Files& f, const std::string& out) {
  std::vector<Row> rows;
  // One bad a.npy per row, everything else valid; run as --inputs DIR --save-output OUT.
  auto bad_a = [&](const std::string& what, const std::string& bytes, const std::string& reason) {
    rows.push_back({"a.npy: " + what, {"--inputs", f.case_with_bytes("a.npy", bytes), "--save-output", out},
                    "/a.npy: ", reason});
  };
  const std::string u8 = "|u1", ok_shape = "(4, 16)";
  bad_a("empty file", "", "too short");
  bad_a("5 bytes", "\x93NUMP"s, "too short");
  bad_a("wrong magic", "\x93NUMPX\x01\x00\x10\x00"s + std::string(80, ' '), "magic string");
  bad_a("a text file", "this is not a numpy file at all, just some text\n", "magic string");
  bad_a("version 4.0", npy(4, dict(u8, ok_shape), 64), "version 4.0");
  bad_a("version 1.1", npy(1, dict(u8, ok_shape), 64, true, 1), "version 1.1");
  bad_a("version 0.0", npy(0, dict(u8, ok_shape), 64), "version 0.0");
  bad_a("header length past the end", "\x93NUMPY\x01\x00\xff\xff{'descr'"s, "the header claims 65535");
  bad_a("v2 length field cut", "\x93NUMPY\x02\x00\x10\x00\x00"s, "header length field");
  bad_a("v2 header length 4 GiB", "\x93NUMPY\x02\x00\xff\xff\xff\xff{}"s, "the header claims 4294967295");
  bad_a("header is a list", npy(1, "[1, 2, 3]", 64), "malformed header");
  bad_a("no shape key", npy(1, "{'descr': '|u1', 'fortran_order': False}", 64), "missing key 'shape'");
  bad_a("no descr key", npy(1, "{'fortran_order': False, 'shape': (4, 16)}", 64), "missing key 'descr'");
  bad_a("no fortran_order key", npy(1, "{'descr': '|u1', 'shape': (4, 16)}", 64), "missing key 'fortran_order'");
  bad_a("duplicate descr", npy(1, "{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (4, 16)}", 64),
        "duplicate key 'descr'");
  bad_a("unknown key", npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (4, 16), 'extra': 1}", 64),
        "unexpected key 'extra'");
  bad_a("fortran_order Maybe", npy(1, dict(u8, ok_shape, "Maybe"), 64), "True or False");
  bad_a("dtype float32", npy(1, dict("<f4", ok_shape), 256), "dtype float32, expected uint8");
  bad_a("dtype float16", npy(1, dict("<f2", ok_shape), 128), "dtype float16, expected uint8");
  bad_a("dtype float64", npy(1, dict("<f8", ok_shape), 512), "dtype float64, expected uint8");
  bad_a("big-endian float32", npy(1, dict(">f4", ok_shape), 256), "big-endian");
  bad_a("dtype int32", npy(1, dict("<i4", ok_shape), 256), "unsupported dtype '<i4'");
  bad_a("dtype bool", npy(1, dict("|b1", ok_shape), 64), "unsupported dtype '|b1'");
  bad_a("dtype object", npy(1, dict("|O", ok_shape), 512), "unsupported dtype '|O'");
  // What other tools write by mistake gets a hint: wider integers, ml_dtypes arrays (a void dtype).
  // (int8 bytes are read as the bytes they are: tests/harness/test_intake.cpp.)
  bad_a("dtype uint16", npy(1, dict("<u2", ok_shape), 128), "expected uint8: packed E2M1 codes, two per byte");
  bad_a("an ml_dtypes array", npy(1, dict("|V1", ok_shape), 64), "numpy writes for ml_dtypes' float8 and float4");
  // GPU MODE's (M, K/2, L) read batch-first: K = 2, with the flag that reads it named.
  bad_a("batch-last read batch-first", npy(1, dict(u8, "(4, 16, 1)"), 64), "pass --batch-last");
  // Header strings are echoed escaped: the refusal stays one line, no terminal control reaches it.
  bad_a("a newline in descr", npy(1, dict("<\nf2", ok_shape), 128), "unsupported dtype '<\\x0af2'");
  bad_a("an escape in a key", npy(1, "{'descr': '|u1', 'fortran_order': False, 'sh\x1b[31mape': (4, 16)}", 64),
        "unexpected key 'sh\\x1b[31mape'");
  bad_a("structured dtype", npy(1, "{'descr': [('x', '|u1')], 'fortran_order': False, 'shape': (4, 16)}", 64),
        "structured dtypes");
  bad_a("negative dimension", npy(1, dict(u8, "(-4, 16)"), 64), "non-negative integer");
  bad_a("4 dimensions", npy(1, dict(u8, "(1, 4, 16, 1)"), 64), "4 dimensions");
  bad_a("0 dimensions", npy(1, dict(u8, "()"), 1), "0 dimensions");
  bad_a("1 dimension", npy(1, dict(u8, "(64,)"), 64), "1 dimension(s)");
  bad_a("an empty dimension", npy(1, dict(u8, "(0, 16)"), 0), "empty dimension");
  bad_a("a dimension of 2^49", npy(1, dict(u8, "(562949953421312, 16)"), 64), "too large");
  bad_a("shape product past 2^64", npy(1, dict(u8, "(99999999999999, 99999999999999, 99999999)"), 64),
        "more than 2^64");
  bad_a("unclosed shape tuple", npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (4, 16}", 64),
        "malformed header");
  bad_a("escape in a string", npy(1, "{'descr': '|u\\x31', 'fortran_order': False, 'shape': (4, 16)}", 64),
        "escape sequences");
  bad_a("unterminated string", npy(1, "{'descr': '|u1, 'fortran_order': False, 'shape': (4, 16)}", 64),
        "malformed header");
  bad_a("text after the dict", npy(1, dict(u8, ok_shape) + " trailing", 64), "unexpected text after the header dict");
  bad_a("truncated data", npy(1, dict(u8, ok_shape), 10), "truncated: shape (4, 16)");
  bad_a("no data at all", npy(1, dict(u8, ok_shape), 0), "the file has 0");
  bad_a("100 bytes too many", npy(1, dict(u8, ok_shape), 164), "100 unexpected bytes");
  bad_a("K = 8, not a multiple of 16", npy(1, dict(u8, "(4, 4)"), 16), "not a multiple of 16");
  {
    // A v2 header of 2 MiB (past the reader's 1 MiB bound), all of it present.
    std::string big = "{'descr': '|u1', 'fortran_order': False, 'shape': (4, 16), }";
    big.append((size_t(2) << 20) - big.size() - 1, ' ');
    big += '\n';
    bad_a("a 2 MiB header", npy(2, big, 64, false), "more than the 1048576");
  }
  // Sparse files: refused from the header and fstat, before any data is read.
  rows.push_back({"a.npy: valid header then 3 GB",
                  {"--inputs", f.case_with("a.npy", [](const std::string& p) {
                     write_sparse(p, npy(1, dict("|u1", "(4, 16)"), 64), uint64_t(3) << 30);
                   }),
                   "--save-output", out},
                  "/a.npy: ", "unexpected bytes"});
  rows.push_back({"a.npy: 100 GB, 1-D header that matches its size",
                  {"--inputs", f.case_with("a.npy", [](const std::string& p) {
                     const std::string h = npy(1, dict("|u1", "(100000000000,)"), 0);
                     write_sparse(p, h, h.size() + 100000000000ull);
                   }),
                   "--save-output", out},
                  "/a.npy: ", "1 dimension(s)"});
  rows.push_back({"a.npy: 100 GB of zeros (no header)",
                  {"--inputs", f.case_with("a.npy", [](const std::string& p) { write_sparse(p, "", 100000000000ull); }),
                   "--save-output", out},
                  "/a.npy: ", "magic string"});
  {
    // A consistent case whose A and SFA promise 100 GB and 12.5 GB (sparse): the memory estimate
    // refuses it from the six headers.
    const std::string d = f.path("huge_case");
    fs::create_directories(d);
    auto put = [&](const char* file, const std::string& shape, uint64_t bytes) {
      const std::string h = npy(1, dict("|u1", shape), 0);
      write_sparse(d + "/" + file, h, h.size() + bytes);
    };
    put("a.npy", "(100000, 1000000)", 100000000000ull);
    put("b1.npy", "(1, 1000000)", 1000000);
    put("b2.npy", "(1, 1000000)", 1000000);
    put("sfa.npy", "(100000, 125000)", 12500000000ull);
    put("sfb1.npy", "(1, 125000)", 125000);
    put("sfb2.npy", "(1, 125000)", 125000);
    rows.push_back({"a case of 100 GB (consistent headers)", {"--inputs", d, "--save-output", out}, "--inputs " + d,
                    "needs about"});
    rows.push_back({"a case of 100 GB, path mode", {"--inputs", d, "--verify", "plain", "--backend", "cpu"},
                    "--inputs " + d, "needs about"});
  }
  // Special files and missing files where a.npy belongs.
  auto special_a = [&](const std::string& what, const std::function<void(const std::string&)>& make,
                       const std::string& reason) {
    rows.push_back({"a.npy: " + what, {"--inputs", f.case_with("a.npy", make), "--save-output", out}, "/a.npy: ", reason});
  };
  special_a("a FIFO", make_fifo, "is a FIFO (named pipe), not a regular file");
  special_a("a directory", [](const std::string& p) { fs::create_directory(p); }, "is a directory, not a regular file");
  special_a("a socket", make_socket, "is a socket, not a regular file");
  special_a("a link to /dev/zero", [](const std::string& p) { fs::create_symlink("/dev/zero", p); },
            "is a character device, not a regular file");
  special_a("a dangling link", [](const std::string& p) { fs::create_symlink(p + ".gone", p); }, "cannot open");
  special_a("missing", [](const std::string&) {}, "cannot open");
  if (geteuid() != 0)  // root reads anything: the row would prove nothing there
    special_a("unreadable", [](const std::string& p) {
      write_bytes(p, npy(1, dict("|u1", "(4, 16)"), 64));
      chmod(p.c_str(), 0);
    }, "Permission denied");

  // The other five files: each disagreement names the file that disagrees.
  auto bad_file = [&](const char* file, const std::string& bytes, const std::string& reason) {
    rows.push_back({std::string(file) + ": " + reason, {"--inputs", f.case_with_bytes(file, bytes), "--save-output", out},
                    std::string("/") + file + ": ", reason});
  };
  bad_file("b1.npy", npy(1, dict("|u1", "(8, 8)"), 64), "8 bytes per row (K = 16), but K = 32");
  bad_file("b2.npy", npy(1, dict("|u1", "(7, 16)"), 112), "N = 7 rows, but b1.npy has N = 8");
  bad_file("b2.npy", npy(1, dict("|u1", "(8, 16)"), 100), "truncated");
  bad_file("sfa.npy", npy(1, dict("|u1", "(3, 2)"), 6), "3 rows, but a.npy has 4");
  bad_file("sfa.npy", npy(1, dict("|u1", "(4, 3)"), 12), "3 scales per row");
  // Scales saved in the 128 x 4 blocked layout (one 512-byte tile for 4 rows x 2 scales), flat or
  // as (rows, 128): the refusal says which layout the size matches.
  bad_file("sfa.npy", npy(1, dict("|u1", "(1, 512)"), 512),
           "1 rows, but a.npy has 4; its 512 bytes are the 128x4 blocked layout's");
  bad_file("sfb1.npy", npy(1, dict("|u1", "(8, 64)"), 512), "64 scales per row, but K = 32 (from a.npy, 16 bytes per "
           "row) needs K/16 = 2; its 512 bytes are the 128x4 blocked layout's (docs/design.md §1.4): save the plain");
  bad_file("sfb1.npy", npy(1, dict("|u1", "(9, 2)"), 18), "9 rows, but b1.npy has 8");
  bad_file("sfb2.npy", npy(1, dict("|u1", "(8, 1)"), 8), "1 scales per row");
  bad_file("sfb2.npy", npy(1, dict("<f4", "(8, 2)"), 64), "dtype float32");
  bad_file("b1.npy", npy(1, dict("|u1", "(2, 8, 16)"), 256), "L = 2 but a.npy has L = 1");
  bad_file("sfb1.npy", npy(1, dict("|u1", "(8, 2)"), 16 + 4096), "4096 unexpected bytes");
  rows.push_back({"b2.npy: a FIFO", {"--inputs", f.case_with("b2.npy", make_fifo), "--save-output", out}, "/b2.npy: ",
                  "is a FIFO"});
  rows.push_back({"sfb1.npy: a directory",
                  {"--inputs", f.case_with("sfb1.npy", [](const std::string& p) { fs::create_directory(p); }),
                   "--save-output", out},
                  "/sfb1.npy: ", "is a directory"});
  {
    // L = 2 saved batch-first, read with --batch-last: a (2, 4, 16) reads as rows 2, K/2 = 4, L = 16.
    const std::string d = f.path("batch2");
    save_case(d, make_problem(Shape{4, 8, 32, 2}, "normal", 1));
    rows.push_back({"batch-first files read --batch-last", {"--inputs", d, "--batch-last", "--save-output", out},
                    "/a.npy: ", "not a multiple of 16"});
    const std::string e = f.path("empty_case");
    fs::create_directories(e);
    rows.push_back({"an empty case directory", {"--inputs", e, "--save-output", out}, "/a.npy: ", "cannot open"});
  }
  return rows;
}

std::vector<Row> output_and_dir_rows(Files& f) {
  std::vector<Row> rows;
  const std::string good = f.valid_case();
  const std::string fifo = f.path("fifo"), dir = f.path("dir"), file = f.path("file.txt");
  make_fifo(fifo);
  fs::create_directories(dir);
  write_bytes(file, "text\n");
  const std::string out = f.path("out.npy");

  // A c.npy in the case directory is checked when no other mode is given.
  auto bad_c = [&](const std::string& what, const std::function<void(const std::string&)>& make,
                   const std::string& reason) {
    rows.push_back({"c.npy: " + what, {"--inputs", f.case_with("c.npy", make)}, "/c.npy: ", reason});
  };
  bad_c("a FIFO", make_fifo, "is a FIFO (named pipe)");
  bad_c("a directory", [](const std::string& p) { fs::create_directory(p); }, "is a directory");
  bad_c("a link to /dev/null", [](const std::string& p) { fs::create_symlink("/dev/null", p); }, "character device");
  bad_c("a dangling link", [](const std::string& p) { fs::create_symlink(p + ".gone", p); }, "does not exist");
  bad_c("dtype uint8", [](const std::string& p) { write_bytes(p, npy(1, dict("|u1", "(4, 8)"), 32)); },
        "dtype uint8, expected float16");
  bad_c("shape (5, 8)", [](const std::string& p) { write_bytes(p, npy(1, dict("<f2", "(5, 8)"), 80)); },
        "does not match the problem 4x8x32");
  bad_c("shape (4, 8, 2)", [](const std::string& p) { write_bytes(p, npy(1, dict("<f2", "(4, 8, 2)"), 128)); },
        "does not match");
  bad_c("truncated", [](const std::string& p) { write_bytes(p, npy(1, dict("<f2", "(4, 8)"), 63)); }, "truncated");
  bad_c("20 GB sparse, header of (100000, 100000)", [](const std::string& p) {
    const std::string h = npy(1, dict("<f2", "(100000, 100000)"), 0);
    write_sparse(p, h, h.size() + 20000000000ull);
  }, "does not match the problem");

  // --check FILE.
  auto bad_check = [&](const std::string& what, const std::string& path, const std::string& offender,
                       const std::string& reason) {
    rows.push_back({"--check " + what, {"--inputs", good, "--check", path}, offender, reason});
  };
  bad_check("a FIFO", fifo, "--check " + fifo, "is a FIFO (named pipe)");
  bad_check("a directory", dir, "--check " + dir, "is a directory");
  bad_check("missing", f.path("nope.npy"), "--check " + f.path("nope.npy"), "does not exist");
  bad_check("/dev/zero", "/dev/zero", "--check /dev/zero", "character device");
  {
    const std::string p = f.path("c_u8.npy");
    write_bytes(p, npy(1, dict("|u1", "(4, 8)"), 32));
    bad_check("uint8", p, p + ": ", "expected float16");
    const std::string q = f.path("c_3gb.npy");
    write_sparse(q, npy(1, dict("<f2", "(4, 8)"), 64), uint64_t(3) << 30);
    bad_check("valid header then 3 GB", q, q + ": ", "unexpected bytes");
    const std::string t = f.path("c_text.npy");
    write_bytes(t, "1.0 2.0 3.0\n");
    bad_check("a text file", t, t + ": ", "magic string");
  }

  // Output paths: refused before any work, with the type named.
  const std::string no_dir = f.path("no/such/dir/x.out"), under_file = file + "/x.out";
  auto bad_out = [&](const char* opt, const std::vector<std::string>& mode) {
    const std::string o = std::string("--") + opt;
    auto row = [&](const std::string& what, const std::string& path, const std::string& reason) {
      std::vector<std::string> args = mode;
      args.push_back(o);
      args.push_back(path);
      rows.push_back({o + " " + what, args, o + " " + path + ": ", reason});
    };
    row("a FIFO", fifo, "is a FIFO (named pipe), not a regular file");
    row("a directory", dir, "is a directory, not a regular file");
    row("/dev/null", "/dev/null", "is a character device");
    row("in a missing directory", no_dir, "does not exist");
    row("under a regular file", under_file, "a component of its directory is not a directory");
    row("ending with /", f.path("newdir/"), "ends with '/'");
    if (geteuid() != 0) {
      const std::string ro = f.path(std::string("ro_") + opt);
      fs::create_directories(ro);
      chmod(ro.c_str(), 0555);
      row("in a read-only directory", ro + "/x.out", "not writable");
    }
  };
  bad_out("save-output", {"--inputs", good});
  bad_out("json", {"--verify", "plain", "--backend", "cpu", "--shape", "1x1x16"});
  rows.push_back({"--save-output over the case's a.npy", {"--inputs", good, "--save-output", good + "/a.npy"},
                  "--save-output " + good + "/a.npy", "is the case's input a.npy"});
  rows.push_back({"--json over the case's b1.npy", {"--inputs", good, "--verify", "plain", "--json", good + "/b1.npy"},
                  "--json " + good + "/b1.npy", "is the case's input b1.npy"});
  rows.push_back({"--json and --save-output the same file", {"--inputs", good, "--save-output", out, "--json", out},
                  "--json and --save-output", "same file"});

  // --inputs DIR.
  auto bad_inputs = [&](const std::string& what, const std::string& path, const std::string& reason) {
    rows.push_back({"--inputs " + what, {"--inputs", path, "--save-output", out}, "--inputs " + path, reason});
  };
  bad_inputs("a FIFO", fifo, "is a FIFO (named pipe), not a directory");
  bad_inputs("a regular file", file, "is a regular file, not a directory");
  bad_inputs("missing", f.path("nowhere"), "not a directory");
  bad_inputs("/dev/null", "/dev/null", "is a character device");

  // --tune-cache DIR and the cache file in it.
  const std::vector<std::string> tune = {"--verify", "autotune", "--backend", "cpu", "--shape", "1x1x16"};
  auto bad_cache = [&](const std::string& what, const std::string& d, const std::string& offender,
                       const std::string& reason) {
    std::vector<std::string> args = tune;
    args.push_back("--tune-cache");
    args.push_back(d);
    rows.push_back({"--tune-cache " + what, args, offender, reason});
  };
  {
    const std::string d1 = f.path("tc_fifo"), d2 = f.path("tc_dir"), d3 = f.path("tc_sock");
    fs::create_directories(d1);
    fs::create_directories(d2 + "/autotune-cache.txt");
    fs::create_directories(d3);
    make_fifo(d1 + "/autotune-cache.txt");
    make_socket(d3 + "/autotune-cache.txt");
    bad_cache("whose cache file is a FIFO", d1, d1 + "/autotune-cache.txt", "is a FIFO (named pipe)");
    bad_cache("whose cache file is a directory", d2, d2 + "/autotune-cache.txt", "is a directory");
    bad_cache("whose cache file is a socket", d3, d3 + "/autotune-cache.txt", "is a socket");
    bad_cache("a regular file", file, "--tune-cache " + file, "not a directory");
    bad_cache("a FIFO", fifo, "--tune-cache " + fifo, "is a FIFO (named pipe), not a directory");
    bad_cache("under a regular file", under_file, "--tune-cache " + under_file, "is not a directory");
  }
  return rows;
}

std::vector<Row> option_rows(Files& f) {
  std::vector<Row> rows;
  const std::string good = f.valid_case(), out = f.path("o.npy");
  // Generated-case mode with one tiny shape, so a row that is wrongly accepted ends quickly.
  auto opt = [&](std::vector<std::string> args, const std::string& offender, const std::string& reason) {
    std::string what;
    for (const auto& a : args) what += (what.empty() ? "" : " ") + (a.empty() ? std::string("''") : a);
    rows.push_back({what, args, offender, reason});
  };
  const std::string empty = "needs a value (got an empty string)";
  opt({"--verify", "plain", "--shape", ""}, "--shape", empty);
  opt({"--verify", "plain", "--shape", ","}, "--shape", "empty item");
  opt({"--verify", "plain", "--shape", " , "}, "--shape", "empty item");
  opt({"--verify", "plain", "--shape", "1x1x16,,7x13x48"}, "--shape", "empty item");
  opt({"--verify", "plain", "--shape", "1x1x15"}, "--shape", "not a multiple of 16");
  opt({"--verify", "plain", "--shape", "0x1x16"}, "--shape", "at least 1");
  opt({"--verify", "plain", "--shape", "1x1x16x0"}, "--shape", "at least 1");
  opt({"--verify", "plain", "--shape", "1x1"}, "--shape", "expected MxNxK");
  opt({"--verify", "plain", "--shape", "1x1x16x1x1"}, "--shape", "expected MxNxK");
  opt({"--verify", "plain", "--shape", "1x1x16x"}, "--shape", "expected MxNxK");
  opt({"--verify", "plain", "--shape", "ax1x16"}, "--shape", "expected MxNxK");
  opt({"--verify", "plain", "--shape", "99999999999x1x16"}, "--shape", "needs about");
  opt({"--verify", "plain", "--shape", "1048576x1048576x16"}, "--shape", "needs about");
  opt({"--verify", "plain", "--shape", "65536x65536x65536", "--max-memory", "64"}, "--shape", "needs about");
  opt({"--verify", "plain", "--shape", "4096x4096x4096", "--max-memory", "0.01"}, "--shape", "more than the 10.2 MiB");
  opt({"--verify", "all", "--max-memory", "0.0001"}, "suite case", "needs about");
  opt({"--verify", "plain", "--shape", "4x4x16", "--alpha", "1e40,1"}, "1e40", "outside fp32's range");
  opt({"--verify", "plain", "--shape", "4x4x16", "--alpha", "1,-1e-50"}, "-1e-50", "below fp32's smallest subnormal");
  opt({"--verify", "plain", "--shape", "4x4x16", "--alpha", "1,inf"}, "bad alphas", "two finite numbers");
  opt({"--verify", "plain", "--dist", ""}, "--dist", empty);
  opt({"--verify", "plain", "--dist", ","}, "--dist", "empty item");
  opt({"--verify", "plain", "--dist", "gaussian"}, "--dist", "unknown distribution 'gaussian'");
  opt({"--verify", "plain", "--seed", "-1"}, "--seed", "integer in [0, 2^64 - 1]");
  opt({"--verify", "plain", "--seed", "-18446744073709551615"}, "--seed", "integer in [0, 2^64 - 1]");
  opt({"--verify", "plain", "--seed", "18446744073709551616"}, "--seed", "");
  opt({"--verify", "plain", "--seed", "1.5"}, "--seed", "");
  opt({"--verify", "plain", "--seed", "0x10"}, "--seed", "");
  opt({"--verify", "plain", "--seed", ""}, "--seed", "invalid");
  opt({"--verify", "plain", "--inject", "hang@run:if=bogus"}, "--inject hang@run:if=bogus", "would never fire");
  opt({"--verify", "plain", "--inject", "crash@init:if=fused+bogus"}, "--inject crash@init:if=fused+bogus",
      "would never fire");
  opt({"--verify", "plain", "--inject", ""}, "--inject", empty);
  opt({"--verify", "plain", "--inject", "hang@nowhere"}, "--inject", "bad fault 'hang@nowhere'");
  opt({"--verify", "plain", "--inject", "melt@run"}, "--inject", "bad fault 'melt@run'");
  opt({"--verify", "plain", "--inject", "nan@init"}, "--inject", "write nan@run");
  opt({"--verify", "plain", "--batch-last"}, "--batch-last", "needs --inputs");
  opt({"--verify", "plain", "--check", out}, "--check", "needs --inputs");
  opt({"--verify", "plain", "--save-output", out}, "--save-output", "needs --inputs");
  opt({"--inputs", good, "--save-output", ""}, "--save-output", empty);
  opt({"--inputs", ""}, "--inputs", empty);
  opt({"--inputs", good, "--check", ""}, "--check", empty);
  opt({"--inputs", good, "--shape", "1x1x16", "--save-output", out}, "--shape", "not with --inputs");
  opt({"--inputs", good, "--seed", "3", "--save-output", out}, "--seed", "not with --inputs");
  opt({"--inputs", good, "--verify", "plain", "--check", good + "/a.npy"}, "--check", "outside output");
  opt({"--verify", "plain", "--backend", ""}, "--backend", empty);
  opt({"--verify", "plain", "--backend", ","}, "--backend", "empty item");
  opt({"--verify", "plain", "--backend", "tpu"}, "--backend", "unknown backend 'tpu'");
  opt({"--verify", "plain", "--json", ""}, "--json", empty);
  opt({"--verify", "plain", "--tune-cache", ""}, "--tune-cache", empty);
  opt({"--verify", ""}, "--verify", empty);
  opt({"--verify", ","}, "--verify", "empty item");
  opt({"--verify", "bogus"}, "--verify", "bogus");
  opt({"--verify", "plain+"}, "--verify", "empty name");
  opt({"--verify", "Fused"}, "--verify", "lower-case");
  opt({"--bisect", ""}, "--bisect", empty);
  opt({"--bisect", "bogus"}, "--bisect", "bogus");
  // Two modes at once, in every spelling (the mode table, cli/modes.hpp): refused before any work.
  const std::vector<std::vector<std::string>> mode_flags = {
      {"--verify", "plain"}, {"--bisect", "fused"}, {"--bench", "plain"},     {"--list"},
      {"--merge", out},      {"--report-html", out}, {"--inputs", good, "--check", good + "/a.npy"}};
  for (size_t i = 0; i < mode_flags.size(); ++i)
    for (size_t j = 0; j < mode_flags.size(); ++j) {
      if (i == j || (i == 6 && j == 0) || (i == 0 && j == 6)) continue;  // --inputs with --verify: verify on a case
      std::vector<std::string> args = mode_flags[i];
      args.insert(args.end(), mode_flags[j].begin(), mode_flags[j].end());
      opt(args, "two modes", "give one");
    }
  opt({"verify", "all", "--bench", "plain"}, "two modes: --verify and --bench", "give one");
  opt({"check", "--inputs", good, "--verify", "plain"}, "two modes: check and --verify", "give one");
  opt({"bisect"}, "harness bisect needs COMBO", "");
  opt({"verify", "plain", "--bench-shapes", "1x1x16"}, "--bench-shapes", "not an option of harness verify");
  opt({"list", "--alpha", "1,1"}, "--alpha", "not an option of harness list");
  opt({"merge", out, "--backend", "cpu"}, "--backend", "not an option of harness merge");
  opt({"--shape", "1x1x16"}, "nothing to do", "harness --help");
  // Every output of every mode is checked before any work (a directory is not a file).
  const std::string dir = f.path("");
  const std::vector<std::vector<std::string>> mode_runs = {
      {"--verify", "plain", "--backend", "cpu", "--shape", "1x1x16"},
      {"--bisect", "plain", "--backend", "cpu", "--shape", "1x1x16"},
      {"--bench", "plain", "--backend", "cpu", "--shape", "1x1x16"},
      {"--inputs", good, "--check", good + "/a.npy"},
      {"--merge", out},
      {"--report-html", out}};
  for (const auto& run : mode_runs)
    for (const char* o : {"--json", "--junit", "--html"}) {
      std::vector<std::string> args = run;
      args.push_back(o);
      args.push_back(dir);
      opt(args, o, "");
    }
  opt({"--bench", "plain", "--backend", "cpu", "--bench-json", dir}, "--bench-json", "directory");
  opt({"--bench", "plain", "--backend", "cpu", "--json", out, "--bench-json", out}, "--json and --bench-json",
      "give one");
  opt({"--bench", "plain", "--backend", "cpu", "--shape", "1x1x16", "--bench-shapes", "16x16x16"},
      "--shape and --bench-shapes", "give one");
  opt({"--bench", "bogus", "--backend", "cpu"}, "--bench", "unknown optimization 'bogus'");
  opt({"bench", "plain", "--backend", "cpu", "--shape", "1048576x1048576x16"}, "--shape", "needs about");
  // The stopping rule's numbers: refused, not silently replaced.
  for (const char* v : {"-1", "nan", "inf"}) opt({"bench", "plain", "--backend", "cpu", "--bench-rse", v}, "--bench-rse", ">= 0");
  for (const char* v : {"0", "-1", "nan", "1e300"})
    opt({"bench", "plain", "--backend", "cpu", "--bench-max-time", v}, "--bench-max-time", "at most 1e6");
  opt({"bench", "plain", "--backend", "cpu", "--bench-min-reps", "0"}, "--bench-min-reps", "3 <= min <= max");
  opt({"bench", "plain", "--backend", "cpu", "--bench-min-reps", "2"}, "--bench-min-reps", "three calls; got 2 and");
  opt({"bench", "plain", "--backend", "cpu", "--bench-max-reps", "0"}, "--bench-max-reps", "(a median's spread needs three calls; got 0 and 0)");
  opt({"bench", "plain", "--backend", "cpu", "--bench-min-reps", "10", "--bench-max-reps", "5"}, "--bench-min-reps",
      "got 10 and 5)");
  opt({"bench", "plain", "--backend", "cpu", "--bench-min-reps", "2147483647"}, "--bench-min-reps", "<= 10000000");
  opt({"bench", "plain", "--backend", "cpu", "--bench-warmup", "-1"}, "--bench-warmup", ">= 0");
  opt({"bench", "plain", "--backend", "cpu", "--bench-peak-size", "-1"}, "--bench-peak-size", ">= 0");
  opt({"--verify", "plain", "--tune-cache", "/proc/nvfp4-no-such-dir"}, "--tune-cache", "cannot be created");
  opt({"--verify", "plain", "--backend", "all,cpu"}, "--backend", "'all' stands alone");
  opt({"render", out}, "harness render needs --html", "");
  opt({"merge", "--verify", "plain"}, "two modes: merge and --verify", "give one");
  opt({"check", "--check", out}, "harness check needs --inputs DIR", "");
  opt({"check", "--inputs", good, "--check", good + "/a.npy", "--runs", "5"}, "--runs", "harness check runs none");
  opt({"verify", "all", "--inputs", good, "--save-output", out}, "--save-output", "one combination");
  opt({"bench", "plain", "--backend", "cpu", "--sanitize", "memcheck"}, "--sanitize", "");
  opt({"verify", "plain", "--backend", "cpu", "--sanitize", "memcheck", "--isolate", "worker"}, "--sanitize", "");
  opt({"--verify", "plain", "fused"}, "unexpected argument 'fused'", "lists with commas");
  opt({"--verify", "plain", "--shape", "1x1x16", "7x13x48"}, "unexpected argument '7x13x48'", "lists with commas");
  opt({"stray", "--verify", "plain"}, "unexpected argument 'stray'", "lists with commas");
  opt({"--list", "extra"}, "unexpected argument 'extra'", "lists with commas");
  opt({"--verify", "plain", "--bogus-option"}, "--bogus-option", "unrecognised");
  opt({"--verify", "plain", "--verify", "fused"}, "--verify", "more than once");
  // Every stage's budget, from the stage table (plan.hpp kStages): zero, negative and past 1e6 refused.
  std::vector<std::string> budgets = {"budget-trial"};
  for (const auto& st : nvfp4::kStages)
    if (nvfp4::has_own_budget(st.id)) budgets.push_back(std::string("budget-") + st.name);
  CHECK(budgets.size() == 10);  // load, init, tune, warmup, capture, run, instances, configs, time, the trial
  for (const auto& b : budgets)
    for (const char* v : {"0", "-1", "1e9"})
      opt({"--verify", "plain", "--" + b, v}, "--" + b, "positive number of seconds, at most 1e6");
  opt({"--verify", "plain", "--budget-run", "-1"}, "--budget-run", "positive number of seconds");
  opt({"--verify", "plain", "--budget-run", "nan"}, "--budget-run", "positive number of seconds");
  opt({"--verify", "plain", "--budget-trial", "1e7"}, "--budget-trial", "at most 1e6");
  opt({"--verify", "plain", "--budget-tune", "inf"}, "--budget-tune", "at most 1e6");
  opt({"--verify", "plain", "--budget-warmup", "abc"}, "--budget-warmup", "invalid");
  opt({"--verify", "plain", "--budget-capture", ""}, "--budget-capture", "");
  opt({"--verify", "plain", "--runs", "0"}, "--runs", ">= 1");
  opt({"--verify", "plain", "--runs", "-5"}, "--runs", ">= 1");
  opt({"--verify", "plain", "--runs", "99999999999"}, "--runs", "invalid");
  opt({"--verify", "plain", "--runs", "100000"}, "--runs", "at most 1000");  // 100000 references, no watchdog
  opt({"--verify", "plain", "--runs", "2147483647"}, "--runs", "at most 1000");
  opt({"--verify", "plain", "--warmup", "-1"}, "--warmup", ">= 0");
  opt({"--verify", "plain", "--tune-reps", "0"}, "--tune-reps", ">= 1");
  opt({"--verify", "plain", "--tune-time", "0"}, "--tune-time", "positive number of seconds");
  opt({"--verify", "plain", "--slow-seconds", "-1"}, "--slow-seconds", "non-negative number of seconds");
  opt({"--verify", "plain", "--max-memory", "0"}, "--max-memory", "positive number of GiB");
  opt({"--verify", "plain", "--max-memory", "-1"}, "--max-memory", "positive number of GiB");
  opt({"--verify", "plain", "--max-memory", "nan"}, "--max-memory", "positive number of GiB");
  return rows;
}

// Exactly one line: the refusal, and nothing printed before it.
bool one_line(const std::string& out) {
  const size_t nl = out.find('\n');
  return !out.empty() && nl == out.size() - 1;
}

}  // namespace

TEST_CASE("bad input: every row is refused up front with exit 2, one line naming the offender, within a second") {
  Files f;
  std::vector<Row> rows = case_file_rows(f, f.path("out.npy"));
  for (auto& r : output_and_dir_rows(f)) rows.push_back(std::move(r));
  for (auto& r : option_rows(f)) rows.push_back(std::move(r));
  CHECK(rows.size() >= 100);

  int failed = 0;
  for (const Row& row : rows) {
    const harness_cli::TimedResult r = harness_cli::run_argv(row.args, kTimeout);
    const bool ok = !r.timed_out && r.rc == 2 && one_line(r.out) && harness_cli::has(r.out, row.offender) &&
                    harness_cli::has(r.out, row.reason) && r.seconds < kLimit;
    if (!ok) ++failed;
    CAPTURE(row.what);
    CAPTURE(r.out.substr(0, 600));
    CAPTURE(r.seconds);
    CHECK_FALSE(r.timed_out);
    CHECK(r.rc == 2);
    CHECK(one_line(r.out));
    CHECK(harness_cli::has(r.out, row.offender));
    CHECK(harness_cli::has(r.out, row.reason));
    CHECK(r.seconds < kLimit);
  }
  MESSAGE(rows.size() << " bad inputs, " << failed << " not refused as they should be");
  // The refusals happen before any output is written.
  CHECK_FALSE(fs::exists(f.path("out.npy")));
}

namespace {

// Runs `f` on a detached thread; the message of the InputError it throws, or "(no error)", or
// "(still blocked after 5 s)" when it hangs (the thread is then left behind; the process ends).
std::string refusal_of(std::function<void()> f) {
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = done->get_future();
  std::thread([f, done] {
    try {
      f();
      done->set_value("(no error)");
    } catch (const InputError& e) {
      done->set_value(e.what());
    } catch (const std::exception& e) {
      done->set_value(std::string("(other exception) ") + e.what());
    }
  }).detach();
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "(still blocked after 5 s)";
  return result.get();
}

}  // namespace

TEST_CASE("bad input: library writers and the autotune cache refuse a FIFO without waiting on it") {
  const std::string dir = harness_cli::temp_dir();
  const std::string fifo = dir + "/fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
  NpyArray arr;
  arr.shape = {2};
  arr.data = {1, 2};
  const std::string fifo_type = "is a FIFO (named pipe), not a regular file";

  std::string msg = refusal_of([&] { write_npy(fifo, arr); });
  CHECK_MESSAGE(harness_cli::has(msg, fifo + ": " + fifo_type), msg);
  msg = refusal_of([&] { write_text_file(fifo, "{}"); });
  CHECK_MESSAGE(harness_cli::has(msg, fifo + ": " + fifo_type), msg);
  msg = refusal_of([&] { read_npy(fifo); });
  CHECK_MESSAGE(harness_cli::has(msg, fifo + ": " + fifo_type), msg);
  msg = refusal_of([&] { load_output(fifo, Shape{1, 1, 16, 1}); });
  CHECK_MESSAGE(harness_cli::has(msg, fifo + ": " + fifo_type), msg);

  // Autotune's on-disk cache where a FIFO holds the cache file's place: stage tune refuses it.
  const std::string cache = dir + "/cache";
  fs::create_directories(cache);
  const std::string cache_file = cache + "/autotune-cache.txt";
  REQUIRE(mkfifo(cache_file.c_str(), 0644) == 0);
  PlanOptions opt;
  opt.tune_cache_dir = cache;
  opt.tune_reps = 1;
  const Problem p = make_problem(Shape{4, 8, 32, 1}, "normal", 1);
  std::shared_ptr<Plan> plan = build_plan("cpu", Combo::parse("autotune"), p, opt);
  msg = refusal_of([plan] { plan->tune(); });
  CHECK_MESSAGE(harness_cli::has(msg, cache_file + ": " + fifo_type), msg);
}
