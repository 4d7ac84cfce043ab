// tf.train.Example, SequenceExample and TensorBoard Event records as plain
// C++ values, encoded and decoded through protobuf with TensorFlow's field
// numbers (the wire bytes are TensorFlow's). No protobuf type appears here.
//
// Decoding is strict: bytes that are not an Example (a parse failure, or
// fields an Example does not have) give kDataLoss naming the reason, rather
// than an empty Example. Encoding is deterministic: features in key order,
// so the same Example always gives the same bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice {

// One feature: a list of bytes, floats or int64s (or none, as TFX writes
// for missing values).
struct Feature {
  enum class Kind : uint8_t { kNone, kBytes, kFloat, kInt64 };
  Kind kind = Kind::kNone;
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;

  static Feature of_bytes(std::vector<std::string> v);
  static Feature of_floats(std::vector<float> v);
  static Feature of_int64s(std::vector<int64_t> v);
  // Number of values in whichever list is set.
  size_t size() const;
  friend bool operator==(const Feature&, const Feature&) = default;
};

// "bytes_list", "float_list", "int64_list" or "none".
std::string_view feature_kind_name(Feature::Kind kind);

struct Example {
  std::map<std::string, Feature> features;  // key order = encoding order
  friend bool operator==(const Example&, const Example&) = default;
};

struct SequenceExample {
  std::map<std::string, Feature> context;
  std::map<std::string, std::vector<Feature>> feature_lists;
};

// Upper bound on an encoded message we will parse (protobuf's own default
// is 2 GiB; records are bounded separately by the record reader).
inline constexpr size_t kMaxMessageBytes = size_t{1} << 30;

Status decode_example(std::string_view data, Example* out);
std::string encode_example(const Example& example);
Status decode_sequence_example(std::string_view data, SequenceExample* out);

// A TensorBoard event: one scalar summary value, or a header, or something
// sluice does not look inside (graph, metadata, logs).
struct SummaryValue {
  std::string tag;
  // "simple_value", "histo", "image", "audio", "tensor",
  // "obsolete_old_style_histogram" or "none".
  std::string kind;
  float simple_value = 0;
  std::string plugin_name;  // from metadata, when present
};

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  // "file_version", "graph_def", "summary", "log_message", "session_log",
  // "tagged_run_metadata", "meta_graph_def" or "none".
  std::string kind;
  std::string file_version;
  std::vector<SummaryValue> values;
};

Status decode_event(std::string_view data, Event* out);
// Encodes an event with file_version or simple_value scalars (with the
// "scalars" plugin metadata when plugin_name is set).
std::string encode_event(const Event& event);

// A zero-copy look at one feature of a serialized Example, for the hot
// path: no protobuf objects, no copies; views point into the record bytes.
struct FeatureView {
  bool found = false;
  Feature::Kind kind = Feature::Kind::kNone;
  size_t count = 0;              // values in the list
  std::string_view first_bytes;  // kBytes: the first value
  int64_t first_int64 = 0;       // kInt64: the first value
  float first_float = 0;         // kFloat: the first value
};

// Finds `keys` in the serialized Example `data` and fills `out` (same
// length as keys). Follows protobuf's rules where they matter here: the
// last entry for a key wins, a repeated list field appends. Stricter than
// nothing, looser than decode_example: unknown fields are skipped. Returns
// kDataLoss when the bytes are not a well-formed Example.
Status find_features(std::string_view data, const std::string_view* keys, size_t n_keys,
                     FeatureView* out);

// What a record's payload most likely is: the first of Example,
// SequenceExample and Event that parses with no unknown fields.
enum class PayloadKind { kExample, kSequenceExample, kEvent, kOther };
PayloadKind classify_payload(std::string_view data);
std::string_view payload_kind_name(PayloadKind kind);

}  // namespace sluice
