// CRC32C through ISA-L, which picks the fastest kernel for this CPU at run
// time (PCLMUL/SSE4.2 folding: tens of GB/s, far above memory bandwidth).
#include <isa-l/crc.h>

#include <climits>
#include <vector>

#include "base/file_util.h"
#include "record/format.h"
#include "record/stream.h"
#include "sluice/record.h"

namespace sluice {

uint32_t crc32c_extend(uint32_t crc, std::string_view data) {
  // ISA-L works on the non-inverted register; CRC32C pre- and post-inverts.
  // Its length argument is an int, so feed huge buffers in pieces.
  uint32_t reg = ~crc;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  while (n > 0) {
    int chunk = n > static_cast<size_t>(INT_MAX / 2) ? INT_MAX / 2 : static_cast<int>(n);
    reg = crc32_iscsi(const_cast<unsigned char*>(p), chunk, reg);
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
  return ~reg;
}

uint32_t crc32c(std::string_view data) {
  return crc32c_extend(0, data);
}

Result<uint32_t> crc32c_of_file(const std::string& path, uint64_t* bytes) {
  SLUICE_ASSIGN_OR_RETURN(auto f, detail::open_input_stream(path, Compression::kNone));
  std::vector<char> buf(size_t{1} << 20);
  uint32_t crc = 0;
  *bytes = 0;
  for (;;) {
    SLUICE_ASSIGN_OR_RETURN(size_t n, f->read(buf.data(), buf.size()));
    if (n == 0) return crc;
    crc = crc32c_extend(crc, std::string_view(buf.data(), n));
    *bytes += n;
  }
}

uint32_t mask_crc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + record_format::kMaskDelta;
}

uint32_t unmask_crc(uint32_t masked) {
  uint32_t rot = masked - record_format::kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace sluice
