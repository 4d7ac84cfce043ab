#include "train/checkpoint_meta.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace sluice::training {
namespace {

using json = nlohmann::json;

// Every field of the description, by its JSON key: the one list that both
// format and parse walk.
template <typename Meta, typename F>
void for_each_field(Meta& m, F&& f) {
  f("format", m.format);
  f("model", m.model);
  f("classes", m.classes);
  f("image_size", m.image_size);
  f("mean", m.mean);
  f("std", m.std);
  f("epoch", m.epoch);
  f("batches_done", m.batches_done);
  f("batches_per_epoch", m.batches_per_epoch);
  f("step", m.step);
  f("world_size", m.world_size);
  f("seed", m.seed);
  f("batch_size", m.batch_size);
  f("order", m.order);
  f("records", m.records);
  f("amp", m.amp);
  f("optimizer", m.optimizer);
  f("epochs", m.epochs);
  f("running", m.running);
}

// The exceptions to "counts are >= 0" and "numbers are finite".
int64_t least_value(std::string_view key) {
  return key == "world_size" ? 1 : 0;
}
// A diverged run's loss sum is NaN (JSON null), and it still resumes.
bool null_is_nan(std::string_view key) {
  return key == "running";
}

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// Reads the typed fields of one JSON object; the first bad key is kept.
class Reader {
 public:
  Reader(const json& j, std::string_view path) : j_(j), path_(path) {}

  const Status& status() const { return status_; }

  // A key that is absent leaves the field as it is.
  template <typename T>
  void operator()(const char* key, T& out) {
    if (!status_.ok()) return;
    auto it = j_.find(key);
    if (it == j_.end()) return;
    if constexpr (is_optional<T>::value) {
      typename T::value_type v{};
      read(key, *it, &v);
      if (status_.ok()) out = std::move(v);
    } else {
      read(key, *it, &out);
    }
  }

 private:
  void read(const char* key, const json& v, std::string* out) {
    if (!v.is_string()) return fail(key, "a string");
    *out = v.get<std::string>();
  }
  void read(const char* key, const json& v, std::vector<std::string>* out) {
    if (!v.is_array()) return fail(key, "an array of strings");
    std::vector<std::string> s;
    for (const json& e : v) {
      if (!e.is_string()) return fail(key, "an array of strings");
      s.push_back(e.get<std::string>());
    }
    *out = std::move(s);
  }
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  void read(const char* key, const json& v, Int* out) {
    const int64_t least = least_value(key);
    const auto most = static_cast<uint64_t>(std::numeric_limits<Int>::max());
    const std::string want = fmt::format("an integer of at least {}", least);
    if (!v.is_number_integer()) return fail(key, want);
    if (v.is_number_unsigned()) {  // nlohmann's type for any integer >= 0
      const uint64_t u = v.get<uint64_t>();
      if (u > most || u < static_cast<uint64_t>(least)) return fail(key, want);
      *out = static_cast<Int>(u);
      return;
    }
    const int64_t i = v.get<int64_t>();
    if (i < least || static_cast<uint64_t>(i) > most) return fail(key, want);
    *out = static_cast<Int>(i);
  }
  template <typename T, size_t N>
  void read(const char* key, const json& v, std::array<T, N>* out) {
    const std::string want = std::is_integral_v<T>
                                 ? fmt::format("an array of {} positive integers", N)
                                 : fmt::format("an array of {} numbers", N);
    if (!v.is_array() || v.size() != N) return fail(key, want);
    for (size_t i = 0; i < N; ++i) {
      const json& e = v[i];
      if constexpr (std::is_floating_point_v<T>) {
        if (e.is_null() && null_is_nan(key)) {
          (*out)[i] = std::numeric_limits<T>::quiet_NaN();
          continue;
        }
      }
      if (!e.is_number()) return fail(key, want);
      const double d = e.get<double>();
      if constexpr (std::is_integral_v<T>) {
        if (!e.is_number_integer() || d < 1 || d > std::numeric_limits<T>::max()) {
          return fail(key, want);
        }
      } else if (std::fabs(d) > std::numeric_limits<T>::max()) {
        return fail(key, "numbers in range");
      }
      (*out)[i] = static_cast<T>(d);
    }
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
  for_each_field(m, [&](const char* key, const auto& v) {
    if constexpr (is_optional<std::decay_t<decltype(v)>>::value) {
      if (v) j[key] = *v;
    } else {
      j[key] = v;
    }
  });
  return j.dump();
}

Result<CheckpointMeta> parse_checkpoint_meta(std::string_view text, std::string_view path) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return data_loss_error(fmt::format("{}: the checkpoint's description is not JSON", path));
  }
  CheckpointMeta m;
  Reader read(j, path);
  for_each_field(m, read);
  if (!read.status().ok()) return read.status();
  if (m.std) {
    for (float s : *m.std) {
      if (s == 0)
        return data_loss_error(fmt::format("{}: the checkpoint's \"std\" holds a 0", path));
    }
  }
  return m;
}

}  // namespace sluice::training
