// Fuzzes protobuf decoding of Example, SequenceExample and Event payloads.
#include <google/protobuf/stubs/logging.h>

#include <vector>

#include "sluice/example.h"

// protobuf logs every string field with invalid UTF-8 (and parses on):
// millions of lines in a campaign, which would slow it down.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  sluice::Example e;
  if (sluice::decode_example(bytes, &e).ok()) {
    sluice::Example back;
    // What we decode, we must be able to encode and decode again, to the
    // same bytes (not operator==: a NaN float is not equal to itself).
    const std::string once = sluice::encode_example(e);
    if (!sluice::decode_example(once, &back).ok() || sluice::encode_example(back) != once) {
      __builtin_trap();
    }
  }
  sluice::SequenceExample se;
  sluice::decode_sequence_example(bytes, &se).ignore();
  sluice::Event ev;
  sluice::decode_event(bytes, &ev).ignore();
  sluice::classify_payload(bytes);
  return 0;
}
