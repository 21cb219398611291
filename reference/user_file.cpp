// user_file.cpp — non-blocking, type-checked opens of user-named paths (see user_file.hpp).
#include "user_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "errors.hpp"

namespace nvfp4 {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& what) { throw InputError(path + ": " + what); }

// stat(2) gave ENOTDIR: a name before the last '/' is a file, not a directory.
const char* const kComponentNotDir = "cannot exist: a component of its directory is not a directory";

std::string not_regular(unsigned mode) { return "is " + file_type_name(mode) + ", not a regular file"; }

// The directory part of a path: "dir" for "dir/x", "." for "x", "/" for "/x".
std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Why nothing could be created in `dir` ("" when it is a writable directory).
std::string creatable_in(const std::string& dir, const char* what) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return std::string(what) + " " + dir + (errno == ENOENT ? " does not exist" : ": " + std::string(std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) return std::string(what) + " " + dir + " is " + file_type_name(st.st_mode) + ", not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return std::string(what) + " " + dir + " is not writable (" + std::strerror(errno) + ")";
  return "";
}

void clear_nonblock(int fd, const std::string& path) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(path + ": fcntl: " + std::strerror(err));
  }
}

}  // namespace

std::string file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFSOCK: return "a socket";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFLNK: return "a symbolic link";
  }
  return "a special file";
}

UserFile UserFile::open_read(const std::string& path) {
  if (path.empty()) throw InputError("an empty path names no file");
  // stat first: it never blocks and names the type even where open(2) would fail (a socket).
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    refuse(path, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(path, not_regular(st.st_mode));
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) refuse(path, std::string("cannot open: ") + std::strerror(errno));
  // The path may have been replaced since the stat: the open file itself decides.
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    refuse(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(path, not_regular(st.st_mode));
  }
  clear_nonblock(fd, path);
  return UserFile(fd, path, uint64_t(st.st_size));
}

UserFile UserFile::open_write(const std::string& path, bool append) {
  const std::string why = output_file_problem(path);
  if (!why.empty()) refuse(path, why);
  // O_NONBLOCK: a FIFO that appeared since the check fails with ENXIO (no reader) instead of
  // waiting for one; no O_TRUNC: only a regular file is truncated, below.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : 0), 0666);
  if (fd < 0) refuse(path, std::string("cannot open for writing: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    refuse(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(path, not_regular(st.st_mode));
  }
  clear_nonblock(fd, path);
  if (!append && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(path + ": cannot truncate: " + std::strerror(err));
  }
  return UserFile(fd, path, append ? uint64_t(st.st_size) : 0);
}

UserFile::UserFile(UserFile&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)), size_(o.size_) { o.fd_ = -1; }

UserFile& UserFile::operator=(UserFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

UserFile::~UserFile() {
  if (fd_ >= 0) ::close(fd_);
}

void UserFile::read_exact(void* dst, size_t n) {
  auto* p = static_cast<char*>(dst);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, p + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(path_ + ": read error: " + std::strerror(errno));
    if (got == 0)
      refuse(path_, "the file ended after " + std::to_string(done) + " of " + std::to_string(n) +
                        " bytes (changed while reading?)");
    done += size_t(got);
  }
}

void UserFile::write_all(const void* src, size_t n) {
  const auto* p = static_cast<const char*>(src);
  size_t done = 0;
  while (done < n) {
    const ssize_t put = ::write(fd_, p + done, n - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
    done += size_t(put);
  }
}

void UserFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
}

std::string input_file_problem(const std::string& path) {
  if (path.empty()) return "an empty path names no file";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "does not exist" : errno == ENOTDIR ? kComponentNotDir : std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  if (::access(path.c_str(), R_OK) != 0) return std::string("is not readable (") + std::strerror(errno) + ")";
  return "";
}

std::string output_file_problem(const std::string& path) {
  if (path.empty()) return "an empty path names no file";
  if (path.back() == '/') return "ends with '/', so it names a directory, not a file";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
    if (::access(path.c_str(), W_OK) != 0) return std::string("is not writable (") + std::strerror(errno) + ")";
    return "";
  }
  if (errno == ENOTDIR) return kComponentNotDir;
  if (errno != ENOENT) return std::strerror(errno);
  return creatable_in(parent_of(path), "its directory");
}

std::string directory_problem(const std::string& path, bool writable, bool may_create) {
  if (path.empty()) return "an empty path names no directory";
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return "is " + file_type_name(st.st_mode) + ", not a directory";
    if (::access(path.c_str(), R_OK | X_OK | (writable ? W_OK : 0)) != 0)
      return std::string("is not ") + (writable ? "writable" : "readable") + " (" + std::strerror(errno) + ")";
    return "";
  }
  if (errno == ENOTDIR) return kComponentNotDir;
  if (errno != ENOENT) return std::strerror(errno);
  if (!may_create) return "is not a directory (no such file or directory)";
  // Created with its missing parents: the nearest existing ancestor must take new entries.
  std::string up = path;
  while (!up.empty() && up.back() == '/') up.pop_back();
  for (;;) {
    up = parent_of(up);
    if (::stat(up.c_str(), &st) == 0 || errno != ENOENT || up == "/" || up == ".") break;
  }
  return creatable_in(up, "its ancestor");
}

void write_text_file(const std::string& path, const std::string& text) {
  UserFile f = UserFile::open_write(path);
  f.write_all(text.data(), text.size());
  f.close();
}

}  // namespace nvfp4
