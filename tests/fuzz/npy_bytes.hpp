// npy_bytes.hpp — .npy files built by hand for the fuzz targets' seed corpora.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fuzz {

// magic, version, header length (u16 for v1, u32 for v2/v3), the raw header text (padded like
// NumPy does: spaces up to a multiple of 64 bytes, then '\n', when `pad`), `data_bytes` data bytes.
inline std::vector<uint8_t> make_npy(int major, const std::string& dict, size_t data_bytes, bool pad = true) {
  std::string header = dict;
  const size_t pre = major == 1 ? 10 : 12;
  if (pad) {
    const size_t total = pre + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
  }
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(major), 0};
  const size_t n = header.size();
  out.push_back(uint8_t(n & 0xFF));
  out.push_back(uint8_t((n >> 8) & 0xFF));
  if (major != 1) {
    out.push_back(uint8_t((n >> 16) & 0xFF));
    out.push_back(uint8_t((n >> 24) & 0xFF));
  }
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(uint8_t(i * 37 + 11));
  return out;
}

}  // namespace fuzz
