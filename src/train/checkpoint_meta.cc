#include "train/checkpoint_meta.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace sluice::training {
namespace {

using json = nlohmann::json;

// Reads the typed fields of one JSON object; the first bad key is kept.
class Fields {
 public:
  Fields(const json& j, std::string_view path) : j_(j), path_(path) {}

  const Status& status() const { return status_; }

  void get(const char* key, std::string* out) {
    if (const json* v = find(key)) {
      if (v->is_string()) {
        *out = v->get<std::string>();
      } else {
        fail(key, "a string");
      }
    }
  }
  void get(const char* key, std::optional<std::string>* out) {
    std::string s;
    if (find(key) == nullptr) return;
    get(key, &s);
    if (status_.ok()) *out = s;
  }
  template <typename Int>
  void get_int(const char* key, Int* out, int64_t min = 0) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_number_integer()) return fail(key, "an integer");
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<Int>::max()) ||
          (min > 0 && u < static_cast<uint64_t>(min))) {
        return fail(key, fmt::format("an integer of at least {}", min));
      }
      *out = static_cast<Int>(u);
      return;
    }
    const int64_t i = v->get<int64_t>();
    if (i < min ||
        static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
      return fail(key, fmt::format("an integer of at least {}", min));
    }
    *out = static_cast<Int>(i);
  }
  template <typename Int>
  void get_int(const char* key, std::optional<Int>* out) {
    if (find(key) == nullptr) return;
    Int v{};
    get_int(key, &v);
    if (status_.ok()) *out = v;
  }
  // `nan_ok`: null (how JSON writers store NaN) is read as NaN.
  template <typename T, size_t N>
  void get_numbers(const char* key, std::optional<std::array<T, N>>* out, bool nan_ok = false) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array() || v->size() != N)
      return fail(key, fmt::format("an array of {} numbers", N));
    std::array<T, N> a{};
    for (size_t i = 0; i < N; ++i) {
      const json& e = (*v)[i];
      if constexpr (std::is_floating_point_v<T>) {
        if (nan_ok && e.is_null()) {
          a[i] = std::numeric_limits<T>::quiet_NaN();
          continue;
        }
      }
      if (!e.is_number()) return fail(key, fmt::format("an array of {} numbers", N));
      const double d = e.get<double>();
      if constexpr (std::is_integral_v<T>) {
        if (!e.is_number_integer() || d < 1 || d > std::numeric_limits<T>::max()) {
          return fail(key, fmt::format("an array of {} positive integers", N));
        }
      } else if (std::fabs(d) > std::numeric_limits<T>::max()) {
        return fail(key, "numbers in range");
      }
      a[i] = static_cast<T>(d);
    }
    *out = a;
  }
  void get(const char* key, std::vector<std::string>* out) {
    const json* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return fail(key, "an array of strings");
    std::vector<std::string> s;
    for (const json& e : *v) {
      if (!e.is_string()) return fail(key, "an array of strings");
      s.push_back(e.get<std::string>());
    }
    *out = std::move(s);
  }

 private:
  const json* find(const char* key) const {
    if (!status_.ok()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void fail(const char* key, std::string_view what) {
    status_ = data_loss_error(
        fmt::format("{}: the checkpoint's description is damaged: \"{}\" is {}, not {}", path_, key,
                    j_[key].dump().substr(0, 60), what));
  }

  const json& j_;
  std::string_view path_;
  Status status_;
};

}  // namespace

std::string format_checkpoint_meta(const CheckpointMeta& m) {
  json j;
  j["format"] = m.format;
  j["model"] = m.model;
  j["classes"] = m.classes;
  if (m.image_size) j["image_size"] = *m.image_size;
  if (m.mean) j["mean"] = *m.mean;
  if (m.std) j["std"] = *m.std;
  j["epoch"] = m.epoch;
  j["batches_done"] = m.batches_done;
  j["batches_per_epoch"] = m.batches_per_epoch;
  j["step"] = m.step;
  j["world_size"] = m.world_size;
  if (m.seed) j["seed"] = *m.seed;
  if (m.batch_size) j["batch_size"] = *m.batch_size;
  if (m.order) j["order"] = *m.order;
  if (m.records) j["records"] = *m.records;
  j["amp"] = m.amp;
  j["optimizer"] = m.optimizer;
  j["epochs"] = m.epochs;
  if (m.running) j["running"] = *m.running;
  return j.dump();
}

Result<CheckpointMeta> parse_checkpoint_meta(std::string_view text, std::string_view path) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return data_loss_error(fmt::format("{}: the checkpoint's description is not JSON", path));
  }
  CheckpointMeta m;
  Fields f(j, path);
  f.get("format", &m.format);
  f.get("model", &m.model);
  f.get("classes", &m.classes);
  f.get_numbers("image_size", &m.image_size);
  f.get_numbers("mean", &m.mean);
  f.get_numbers("std", &m.std);
  f.get_int("epoch", &m.epoch);
  f.get_int("batches_done", &m.batches_done);
  f.get_int("batches_per_epoch", &m.batches_per_epoch);
  f.get_int("step", &m.step);
  f.get_int("world_size", &m.world_size, 1);
  f.get_int("seed", &m.seed);
  f.get_int("batch_size", &m.batch_size);
  f.get("order", &m.order);
  f.get_int("records", &m.records);
  f.get("amp", &m.amp);
  f.get("optimizer", &m.optimizer);
  f.get_int("epochs", &m.epochs);
  // A diverged run's loss sum is NaN, and still resumes.
  f.get_numbers("running", &m.running, /*nan_ok=*/true);
  if (!f.status().ok()) return f.status();
  if (m.std) {
    for (float s : *m.std) {
      if (s == 0)
        return data_loss_error(fmt::format("{}: the checkpoint's \"std\" holds a 0", path));
    }
  }
  return m;
}

}  // namespace sluice::training
