// user_file.hpp — opening the files a user names (case files, outputs, reports, caches) without
// ever blocking on them.
//
// open(2) of a FIFO waits until its other end is opened, and a device or a socket is no data file,
// so every path a user names goes through here: it is opened with O_NONBLOCK, checked with fstat,
// and kept only when it is a regular file (the flag is then cleared, so reads and writes behave as
// usual); anything else is refused with its type named ("is a FIFO (named pipe), not a regular
// file"). A file opened for writing is truncated only once it is known to be regular.
// Every refusal throws InputError "PATH: what is wrong"; an I/O error after a successful open
// (a short read, a full disk) throws std::runtime_error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace nvfp4 {

// "a regular file", "a directory", "a FIFO (named pipe)", "a socket", "a character device",
// "a block device", "a symbolic link" for a stat(2) st_mode.
std::string file_type_name(unsigned mode);

class UserFile {
 public:
  // An existing regular file, for reading.
  static UserFile open_read(const std::string& path);
  // A regular file, created (mode 0666 less the umask) or truncated, for writing; with `append`,
  // kept as it is and written at its end.
  static UserFile open_write(const std::string& path, bool append = false);

  UserFile(UserFile&& o) noexcept;
  UserFile& operator=(UserFile&& o) noexcept;
  UserFile(const UserFile&) = delete;
  UserFile& operator=(const UserFile&) = delete;
  ~UserFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // the size fstat gave when it was opened
  // Reads exactly n bytes from the current position (throws if the file ends first).
  void read_exact(void* dst, size_t n);
  void write_all(const void* src, size_t n);
  // Closes and reports a failed close (a write that only fails then); the destructor closes silently.
  void close();

 private:
  UserFile(int fd, std::string path, uint64_t size) : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
};

// Why `path` could not be read as a data file, without opening it: "" when it is an existing,
// readable regular file; else the reason ("is a FIFO (named pipe), not a regular file", "does not
// exist", ...).
std::string input_file_problem(const std::string& path);
// Why `path` could not be written as an output, without creating or changing anything: "" when it
// is an existing writable regular file, or a new name in an existing writable directory.
std::string output_file_problem(const std::string& path);
// Why `path` could not serve as a directory to read (and, with `writable`, to write) files in:
// "" when it is an existing directory with that access, or (with `may_create`) does not exist yet
// and its parent is a writable directory.
std::string directory_problem(const std::string& path, bool writable, bool may_create);

// Writes `text` to `path` through UserFile::open_write (the harness's JSON report).
void write_text_file(const std::string& path, const std::string& text);

}  // namespace nvfp4
