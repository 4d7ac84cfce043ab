// A zero-copy scan of tf.train.Example wire bytes for a few keys: the
// pipeline needs one image and one label per record, and protobuf's full
// parse (a map, strings copied) costs more than reading the record did.
// Every length is checked against the bytes that remain.
#include <cstring>

#include "sluice/example.h"

namespace sluice {
namespace {

class Wire {
 public:
  explicit Wire(std::string_view d) : p_(d.data()), end_(d.data() + d.size()) {}
  bool done() const { return p_ == end_; }

  bool varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = static_cast<uint8_t>(*p_++);
      result |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        *v = result;
        return true;
      }
    }
    return false;
  }

  // Reads a tag; false at a malformed one. As protobuf reads tags: a
  // varint of at most 5 bytes, of which the low 32 bits count (bits above
  // are dropped, not an error).
  bool tag(uint32_t* field, uint32_t* wire) {
    uint32_t t = 0;
    for (int i = 0;; ++i) {
      if (i == 5 || p_ == end_) return false;
      const auto b = static_cast<uint8_t>(*p_++);
      t |= static_cast<uint32_t>(b & 0x7fu) << (7 * i);
      if (!(b & 0x80)) break;
    }
    *field = t >> 3;
    *wire = static_cast<uint32_t>(t & 7);
    return *field != 0;
  }

  bool bytes(std::string_view* out) {
    uint64_t n;
    if (!varint(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *out = std::string_view(p_, static_cast<size_t>(n));
    p_ += n;
    return true;
  }

  // Skips an unknown field whose tag was just read. Groups (wire types 3
  // and 4, deprecated but still valid) are skipped whole, to the end tag of
  // the same field, as protobuf does; a stray end tag is malformed.
  bool skip(uint32_t wire, uint32_t field, int depth = 0) {
    uint64_t v;
    std::string_view s;
    switch (wire) {
      case 0: return varint(&v);
      case 1: return advance(8);
      case 2: return bytes(&s);
      case 3:
        // protobuf's own recursion limit is 100; nothing real nests groups.
        if (depth >= kMaxGroupDepth) return false;
        for (;;) {
          uint32_t f, w;
          if (!tag(&f, &w)) return false;
          if (w == 4) return f == field;
          if (!skip(w, f, depth + 1)) return false;
        }
      case 5: return advance(4);
      default: return false;
    }
  }

  static constexpr int kMaxGroupDepth = 64;

  bool fixed32(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    std::memcpy(v, p_, 4);
    p_ += 4;
    return true;
  }

 private:
  bool advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }
  const char* p_;
  const char* end_;
};

Status bad(const char* what) {
  return data_loss_error(std::string("not a tf.train.Example (") + what + ")");
}

// Whether a field of a message here arrived with its declared wire type.
// protobuf treats one that did not as an unknown field and skips it, and
// so must the scan (example_scan_fuzz found a Feature whose int64_list came
// as a fixed32).
bool is_value_wire(Feature::Kind kind, uint32_t wire) {
  switch (kind) {
    case Feature::Kind::kBytes: return wire == 2;
    case Feature::Kind::kInt64: return wire == 0 || wire == 2;  // one, or packed
    case Feature::Kind::kFloat: return wire == 5 || wire == 2;  // one, or packed
    case Feature::Kind::kNone: return false;
  }
  return false;
}

// Adds the values of one list message (BytesList, FloatList, Int64List) to
// the view, as protobuf merges repeated occurrences.
bool scan_list(std::string_view list, Feature::Kind kind, FeatureView* v) {
  Wire w(list);
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.tag(&field, &wire)) return false;
    if (field != 1 || !is_value_wire(kind, wire)) {
      if (!w.skip(wire, field)) return false;
      continue;
    }
    if (kind == Feature::Kind::kBytes) {
      std::string_view b;
      if (!w.bytes(&b)) return false;
      if (v->count++ == 0) v->first_bytes = b;
    } else if (kind == Feature::Kind::kInt64) {
      uint64_t x;
      if (wire == 0) {
        if (!w.varint(&x)) return false;
        if (v->count++ == 0) v->first_int64 = static_cast<int64_t>(x);
      } else if (wire == 2) {
        std::string_view packed;
        if (!w.bytes(&packed)) return false;
        Wire pw(packed);
        while (!pw.done()) {
          if (!pw.varint(&x)) return false;
          if (v->count++ == 0) v->first_int64 = static_cast<int64_t>(x);
        }
      }
    } else {
      uint32_t bits;
      if (wire == 5) {
        if (!w.fixed32(&bits)) return false;
        if (v->count++ == 0) std::memcpy(&v->first_float, &bits, 4);
      } else if (wire == 2) {
        std::string_view packed;
        if (!w.bytes(&packed) || packed.size() % 4) return false;
        if (!packed.empty() && v->count == 0) std::memcpy(&v->first_float, packed.data(), 4);
        v->count += packed.size() / 4;
      }
    }
  }
  return true;
}

// Parses one Feature message into `v`, merging into what `v` holds as
// protobuf merges a message field that occurs again: a new oneof case
// replaces the old one, the same list appends. Call on a reset view for a
// fresh Feature.
bool scan_feature(std::string_view feature, FeatureView* v) {
  Wire w(feature);
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.tag(&field, &wire)) return false;
    if (field < 1 || field > 3 || wire != 2) {  // unknown, or a list of the wrong wire type
      if (!w.skip(wire, field)) return false;
      continue;
    }
    std::string_view list;
    if (!w.bytes(&list)) return false;
    Feature::Kind kind = field == 1   ? Feature::Kind::kBytes
                         : field == 2 ? Feature::Kind::kFloat
                                      : Feature::Kind::kInt64;
    if (v->kind != kind) {  // a new oneof case replaces the old one
      *v = FeatureView{};
      v->found = true;
      v->kind = kind;
    }
    if (!scan_list(list, kind, v)) return false;
  }
  return true;
}

}  // namespace

Status find_features(std::string_view data, const std::string_view* keys, size_t n_keys,
                     FeatureView* out) {
  for (size_t i = 0; i < n_keys; ++i) out[i] = FeatureView{};
  Wire example(data);
  while (!example.done()) {
    uint32_t field, wire;
    if (!example.tag(&field, &wire)) return bad("bad tag");
    if (field != 1 || wire != 2) {
      if (!example.skip(wire, field)) return bad("bad field");
      continue;
    }
    std::string_view features;
    if (!example.bytes(&features)) return bad("bad features");
    Wire fw(features);
    while (!fw.done()) {
      uint32_t ff, fwire;
      if (!fw.tag(&ff, &fwire)) return bad("bad tag in features");
      if (ff != 1 || fwire != 2) {
        if (!fw.skip(fwire, ff)) return bad("bad field in features");
        continue;
      }
      std::string_view entry;
      if (!fw.bytes(&entry)) return bad("bad map entry");
      // The key first (the last one wins; it may follow the value), then,
      // for a wanted key, every value field in order: protobuf merges them.
      std::string_view key;
      Wire ew(entry);
      while (!ew.done()) {
        uint32_t ef, ewire;
        if (!ew.tag(&ef, &ewire)) return bad("bad tag in map entry");
        if (ef == 1 && ewire == 2) {
          if (!ew.bytes(&key)) return bad("bad key");
        } else if (!ew.skip(ewire, ef)) {
          return bad("bad field in map entry");
        }
      }
      for (size_t i = 0; i < n_keys; ++i) {
        if (keys[i] != key) continue;
        // The last entry for a key wins, as in protobuf's map parsing.
        out[i] = FeatureView{};
        out[i].found = true;
        Wire vw(entry);
        while (!vw.done()) {
          uint32_t ef, ewire;
          std::string_view value;
          if (!vw.tag(&ef, &ewire)) return bad("bad tag in map entry");
          if (ef == 2 && ewire == 2) {
            if (!vw.bytes(&value) || !scan_feature(value, &out[i])) return bad("bad feature");
          } else if (!vw.skip(ewire, ef)) {
            return bad("bad field in map entry");
          }
        }
      }
    }
  }
  return Status();
}

}  // namespace sluice
