// modules.cpp — the built-in backends' modules (modules.hpp).
#include "modules.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "errors.hpp"

namespace nvfp4 {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "libnvfp4_paths_";
constexpr const char* kSuffix = ".so";

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
}  // namespace

ModuleDir module_dir() {
  ModuleDir d;
  if (const char* env = std::getenv("NVFP4_PATHS_DIR"); env && *env) {
    d.tried = std::string("$NVFP4_PATHS_DIR=") + env;
    if (is_dir(env)) d.path = env;
    return d;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    d.tried = "/proc/self/exe (unreadable: " + ec.message() + ")";
    return d;
  }
  const fs::path candidates[] = {exe.parent_path() / "paths",
                                 exe.parent_path().parent_path() / NVFP4_INSTALL_LIBDIR / "nvfp4_dual" / "paths"};
  for (const auto& c : candidates) {
    d.tried += (d.tried.empty() ? "" : ", ") + c.string();
    if (is_dir(c)) {
      d.path = c.string();
      return d;
    }
  }
  return d;
}

std::string module_path(const ModuleDir& dir, const std::string& backend) {
  return (fs::path(dir.path) / (kPrefix + backend + kSuffix)).string();
}

std::vector<std::string> builtin_backends(const ModuleDir& dir) {
  std::vector<std::string> names;
  if (dir.path.empty()) return names;
  std::error_code ec;
  for (fs::directory_iterator it(dir.path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    const std::string pre = kPrefix, suf = kSuffix;
    if (f.size() > pre.size() + suf.size() && f.compare(0, pre.size(), pre) == 0 &&
        f.compare(f.size() - suf.size(), suf.size(), suf) == 0)
      names.push_back(f.substr(pre.size(), f.size() - pre.size() - suf.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

void* load_module(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    throw InputError("cannot load " + path + ": " + (why ? why : "unknown dlopen error"));
  }
  return h;
}

}  // namespace nvfp4
