// Fuzzes the parser of a checkpoint's description (the JSON a resume,
// --init-from and extract trust for the epoch, batches done, the plan and
// the input size): never an exception or a crash, and what it accepts
// survives format + parse unchanged.
#include <string_view>

#include "train/checkpoint_meta.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto m = sluice::training::parse_checkpoint_meta(text, "fuzz.pt");
  if (!m.ok()) return 0;
  const std::string once = sluice::training::format_checkpoint_meta(*m);
  const auto again = sluice::training::parse_checkpoint_meta(once, "fuzz.pt");
  if (!again.ok() || sluice::training::format_checkpoint_meta(*again) != once) __builtin_trap();
  return 0;
}
