// Example / SequenceExample / Event <-> protobuf. Protobuf stays inside this
// file; the public types are plain structs.
#include "sluice/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include "record/tf_protos.pb.h"

namespace sluice {
namespace {

namespace pb = google::protobuf;

// True when a message and every message inside it parsed without unknown
// fields, i.e. the bytes really are this message type and not another that
// merely shares wire types. Example and SequenceExample are walked through
// the generated accessors, not field reflection: reflection over their map
// fields went through protobuf's MapFieldBase::SyncRepeatedFieldWithMap,
// which crashed under ThreadSanitizer (our code instrumented, Debian's
// libprotobuf not), and is slower besides.
template <typename M>
bool no_unknown(const M& m) {
  return M::GetReflection()->GetUnknownFields(m).empty();
}

bool known(const tf::Feature& f) {
  if (!no_unknown(f)) return false;
  switch (f.kind_case()) {
    case tf::Feature::kBytesList: return no_unknown(f.bytes_list());
    case tf::Feature::kFloatList: return no_unknown(f.float_list());
    case tf::Feature::kInt64List: return no_unknown(f.int64_list());
    case tf::Feature::KIND_NOT_SET: break;
  }
  return true;
}

bool known(const tf::Features& fs) {
  if (!no_unknown(fs)) return false;
  for (const auto& [key, feature] : fs.feature()) {
    if (!known(feature)) return false;
  }
  return true;
}

bool fully_known(const tf::Example& e) {
  return no_unknown(e) && known(e.features());
}

// TensorBoard's Event has no map fields: the general walk over reflection.
bool fully_known(const pb::Message& m) {
  const pb::Reflection* r = m.GetReflection();
  if (!r->GetUnknownFields(m).empty()) return false;
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0, n = r->FieldSize(m, f); i < n; ++i) {
        if (!fully_known(r->GetRepeatedMessage(m, f, i))) return false;
      }
    } else if (!fully_known(r->GetMessage(m, f))) {
      return false;
    }
  }
  return true;
}

bool fully_known(const tf::SequenceExample& e) {
  if (!no_unknown(e) || !known(e.context())) return false;
  const tf::FeatureLists& lists = e.feature_lists();
  if (!no_unknown(lists)) return false;
  for (const auto& [key, list] : lists.feature_list()) {
    if (!no_unknown(list)) return false;
    for (const tf::Feature& f : list.feature()) {
      if (!known(f)) return false;
    }
  }
  return true;
}

template <typename Proto>
Status parse_strict(std::string_view data, Proto* proto, std::string_view what) {
  if (data.size() > kMaxMessageBytes) {
    return resource_exhausted_error("a " + std::string(what) + " of " +
                                    std::to_string(data.size()) + " bytes is over the limit");
  }
  if (!proto->ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return data_loss_error("not a " + std::string(what) + " (protobuf parse failed)");
  }
  if (!fully_known(*proto)) {
    return data_loss_error("not a " + std::string(what) + " (fields it does not have)");
  }
  return Status();
}

Feature from_proto(const tf::Feature& f) {
  Feature out;
  switch (f.kind_case()) {
    case tf::Feature::kBytesList:
      out.kind = Feature::Kind::kBytes;
      out.bytes_list.assign(f.bytes_list().value().begin(), f.bytes_list().value().end());
      break;
    case tf::Feature::kFloatList:
      out.kind = Feature::Kind::kFloat;
      out.float_list.assign(f.float_list().value().begin(), f.float_list().value().end());
      break;
    case tf::Feature::kInt64List:
      out.kind = Feature::Kind::kInt64;
      out.int64_list.assign(f.int64_list().value().begin(), f.int64_list().value().end());
      break;
    case tf::Feature::KIND_NOT_SET: break;
  }
  return out;
}

void to_proto(const Feature& f, tf::Feature* out) {
  switch (f.kind) {
    case Feature::Kind::kBytes:
      for (const std::string& v : f.bytes_list) out->mutable_bytes_list()->add_value(v);
      if (f.bytes_list.empty()) out->mutable_bytes_list();
      break;
    case Feature::Kind::kFloat:
      out->mutable_float_list()->mutable_value()->Add(f.float_list.begin(), f.float_list.end());
      break;
    case Feature::Kind::kInt64:
      out->mutable_int64_list()->mutable_value()->Add(f.int64_list.begin(), f.int64_list.end());
      break;
    case Feature::Kind::kNone: break;
  }
}

std::string serialize_deterministic(const pb::Message& m) {
  std::string out;
  out.reserve(m.ByteSizeLong());
  {
    pb::io::StringOutputStream stream(&out);
    pb::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // map entries in key order
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

const char* event_kind(const tf::Event& e) {
  switch (e.what_case()) {
    case tf::Event::kFileVersion: return "file_version";
    case tf::Event::kGraphDef: return "graph_def";
    case tf::Event::kSummary: return "summary";
    case tf::Event::kLogMessage: return "log_message";
    case tf::Event::kSessionLog: return "session_log";
    case tf::Event::kTaggedRunMetadata: return "tagged_run_metadata";
    case tf::Event::kMetaGraphDef: return "meta_graph_def";
    case tf::Event::WHAT_NOT_SET: break;
  }
  return "none";
}

const char* value_kind(const tf::Summary::Value& v) {
  switch (v.value_case()) {
    case tf::Summary::Value::kSimpleValue: return "simple_value";
    case tf::Summary::Value::kObsoleteOldStyleHistogram: return "obsolete_old_style_histogram";
    case tf::Summary::Value::kImage: return "image";
    case tf::Summary::Value::kHisto: return "histo";
    case tf::Summary::Value::kAudio: return "audio";
    case tf::Summary::Value::kTensor: return "tensor";
    case tf::Summary::Value::VALUE_NOT_SET: break;
  }
  return "none";
}

}  // namespace

Feature Feature::of_bytes(std::vector<std::string> v) {
  Feature f;
  f.kind = Kind::kBytes;
  f.bytes_list = std::move(v);
  return f;
}
Feature Feature::of_floats(std::vector<float> v) {
  Feature f;
  f.kind = Kind::kFloat;
  f.float_list = std::move(v);
  return f;
}
Feature Feature::of_int64s(std::vector<int64_t> v) {
  Feature f;
  f.kind = Kind::kInt64;
  f.int64_list = std::move(v);
  return f;
}

size_t Feature::size() const {
  switch (kind) {
    case Kind::kBytes: return bytes_list.size();
    case Kind::kFloat: return float_list.size();
    case Kind::kInt64: return int64_list.size();
    case Kind::kNone: break;
  }
  return 0;
}

std::string_view feature_kind_name(Feature::Kind kind) {
  switch (kind) {
    case Feature::Kind::kBytes: return "bytes_list";
    case Feature::Kind::kFloat: return "float_list";
    case Feature::Kind::kInt64: return "int64_list";
    case Feature::Kind::kNone: break;
  }
  return "none";
}

Status decode_example(std::string_view data, Example* out) {
  tf::Example proto;
  SLUICE_RETURN_IF_ERROR(parse_strict(data, &proto, "tf.train.Example"));
  out->features.clear();
  for (const auto& [key, feature] : proto.features().feature()) {
    out->features.emplace(key, from_proto(feature));
  }
  return Status();
}

std::string encode_example(const Example& example) {
  tf::Example proto;
  auto* map = proto.mutable_features()->mutable_feature();
  for (const auto& [key, feature] : example.features) to_proto(feature, &(*map)[key]);
  return serialize_deterministic(proto);
}

Status decode_sequence_example(std::string_view data, SequenceExample* out) {
  tf::SequenceExample proto;
  SLUICE_RETURN_IF_ERROR(parse_strict(data, &proto, "tf.train.SequenceExample"));
  out->context.clear();
  out->feature_lists.clear();
  for (const auto& [key, feature] : proto.context().feature()) {
    out->context.emplace(key, from_proto(feature));
  }
  for (const auto& [key, list] : proto.feature_lists().feature_list()) {
    auto& steps = out->feature_lists[key];
    for (const tf::Feature& f : list.feature()) steps.push_back(from_proto(f));
  }
  return Status();
}

Status decode_event(std::string_view data, Event* out) {
  tf::Event proto;
  SLUICE_RETURN_IF_ERROR(parse_strict(data, &proto, "TensorBoard Event"));
  out->wall_time = proto.wall_time();
  out->step = proto.step();
  out->kind = event_kind(proto);
  out->file_version = proto.file_version();
  out->values.clear();
  for (const tf::Summary::Value& v : proto.summary().value()) {
    SummaryValue sv;
    sv.tag = v.tag();
    sv.kind = value_kind(v);
    sv.simple_value = v.simple_value();
    sv.plugin_name = v.metadata().plugin_data().plugin_name();
    out->values.push_back(std::move(sv));
  }
  return Status();
}

std::string encode_event(const Event& event) {
  tf::Event proto;
  proto.set_wall_time(event.wall_time);
  proto.set_step(event.step);
  if (!event.file_version.empty()) {
    proto.set_file_version(event.file_version);
  } else {
    tf::Summary* summary = proto.mutable_summary();
    for (const SummaryValue& sv : event.values) {
      tf::Summary::Value* v = summary->add_value();
      v->set_tag(sv.tag);
      v->set_simple_value(sv.simple_value);
      if (!sv.plugin_name.empty()) {
        v->mutable_metadata()->mutable_plugin_data()->set_plugin_name(sv.plugin_name);
      }
    }
  }
  return serialize_deterministic(proto);
}

PayloadKind classify_payload(std::string_view data) {
  if (data.size() > kMaxMessageBytes) return PayloadKind::kOther;
  {
    tf::Example p;
    if (parse_strict(data, &p, "").ok()) return PayloadKind::kExample;
  }
  {
    tf::SequenceExample p;
    if (parse_strict(data, &p, "").ok()) return PayloadKind::kSequenceExample;
  }
  {
    tf::Event p;
    if (parse_strict(data, &p, "").ok()) return PayloadKind::kEvent;
  }
  return PayloadKind::kOther;
}

std::string_view payload_kind_name(PayloadKind kind) {
  switch (kind) {
    case PayloadKind::kExample: return "tf.train.Example";
    case PayloadKind::kSequenceExample: return "tf.train.SequenceExample";
    case PayloadKind::kEvent: return "tensorflow.Event";
    case PayloadKind::kOther: break;
  }
  return "other";
}

}  // namespace sluice
