// Fuzzes find_features, the zero-copy Example scan on the pipeline's hot
// path, against decode_example (protobuf) as the oracle: whenever protobuf
// accepts the bytes as an Example, the scan must accept them too and agree
// on every key's kind, value count and first value.
#include <google/protobuf/stubs/logging.h>

#include <cstring>
#include <string>
#include <vector>

#include "sluice/example.h"

namespace {

bool same_float(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

}  // namespace

// protobuf logs every string field with invalid UTF-8 (and parses on):
// millions of lines in a campaign, which would slow it down.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The keys the pipeline asks for, plus one no Example here has.
  std::vector<std::string> keys = {"image/encoded", "image/class/label", "image/filename", "label",
                                   "no-such-key"};
  sluice::Example e;
  const bool decoded = sluice::decode_example(bytes, &e).ok();
  if (decoded) {
    for (const auto& [k, f] : e.features) keys.push_back(k);
  }
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<sluice::FeatureView> out(views.size());
  const sluice::Status s = sluice::find_features(bytes, views.data(), views.size(), out.data());
  if (!decoded) return 0;
  if (!s.ok()) __builtin_trap();  // protobuf accepts what the scan rejects
  for (size_t i = 0; i < views.size(); ++i) {
    const auto it = e.features.find(keys[i]);
    const sluice::FeatureView& v = out[i];
    if (it == e.features.end()) {
      if (v.found) __builtin_trap();
      continue;
    }
    const sluice::Feature& f = it->second;
    if (!v.found || v.kind != f.kind || v.count != f.size()) __builtin_trap();
    if (v.count == 0) continue;
    switch (f.kind) {
      case sluice::Feature::Kind::kBytes:
        if (v.first_bytes != f.bytes_list[0]) __builtin_trap();
        break;
      case sluice::Feature::Kind::kInt64:
        if (v.first_int64 != f.int64_list[0]) __builtin_trap();
        break;
      case sluice::Feature::Kind::kFloat:
        if (!same_float(v.first_float, f.float_list[0])) __builtin_trap();
        break;
      case sluice::Feature::Kind::kNone: break;
    }
  }
  return 0;
}
