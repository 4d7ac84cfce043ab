// TFRecord framing constants. The prose spec is docs/formats.md; nothing
// else in the project defines these numbers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::record_format {

// uint64 length + uint32 masked CRC32C of the length bytes.
inline constexpr size_t kHeaderBytes = 12;
// uint32 masked CRC32C of the data.
inline constexpr size_t kFooterBytes = 4;
inline constexpr size_t kFramingBytes = kHeaderBytes + kFooterBytes;
// TensorFlow's (and leveldb's) CRC mask: rotate right 15, add this.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// Compressed-stream magic numbers.
inline constexpr uint8_t kGzipMagic0 = 0x1f;
inline constexpr uint8_t kGzipMagic1 = 0x8b;

}  // namespace sluice::record_format
