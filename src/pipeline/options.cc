#include <charconv>
#include <cmath>
#include <sstream>

#include "device/cuda_runtime.h"
#include "sluice/pipeline_options.h"

namespace sluice {
namespace {

template <typename T>
Status parse_number(std::string_view name, std::string_view v, T lo, T hi, T* out) {
  T x{};
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || x < lo || x > hi) {
    std::ostringstream m;
    m << name << ": expected a number within " << lo << ".." << hi << ", got '" << v << "'";
    return invalid_argument_error(m.str());
  }
  *out = x;
  return Status();
}

// A size given in units of `unit` bytes (MiB, GiB), fractions allowed.
Status parse_bytes(std::string_view name, std::string_view v, double lo, double hi, double unit,
                   uint64_t* out) {
  double n = 0;
  SLUICE_RETURN_IF_ERROR(parse_number<double>(name, v, lo, hi, &n));
  *out = static_cast<uint64_t>(n * unit);
  return Status();
}

Status parse_bool(std::string_view name, std::string_view v, bool* out) {
  if (v == "true" || v == "True" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "False" || v == "0") {
    *out = false;
  } else {
    return invalid_argument_error(std::string(name) + ": expected true or false, got '" +
                                  std::string(v) + "'");
  }
  return Status();
}

// "auto" or a positive count; auto is 0.
Status parse_auto(std::string_view name, std::string_view v, int* out) {
  if (v == "auto" || v == "0") {
    *out = 0;
    return Status();
  }
  return parse_number<int>(name, v, 1, 1024, out);
}

Status parse_triple(std::string_view name, std::string_view v, float* out) {
  std::string text(v);
  for (char& c : text) {
    if (c == ',' || c == '(' || c == ')' || c == '[' || c == ']') c = ' ';
  }
  std::istringstream in(text);
  float x[3];
  std::string rest;
  if (!(in >> x[0] >> x[1] >> x[2]) || (in >> rest)) {
    return invalid_argument_error(std::string(name) + ": expected three numbers (R, G, B), got '" +
                                  std::string(v) + "'");
  }
  for (int i = 0; i < 3; ++i) out[i] = x[i];
  return Status();
}

template <typename Enum>
Status parse_enum(std::string_view name, Result<Enum> parsed, Enum* out) {
  if (!parsed.ok())
    return invalid_argument_error(std::string(name) + ": " +
                                  std::string(parsed.status().message()));
  *out = *parsed;
  return Status();
}

Result<Use> parse_use(std::string_view v) {
  if (v == "auto") return Use::kAuto;
  if (v == "on" || v == "true") return Use::kOn;
  if (v == "off" || v == "false") return Use::kOff;
  return invalid_argument_error("expected auto, on or off, got '" + std::string(v) + "'");
}

Result<AugmentMode> parse_augment(std::string_view v) {
  if (v == "train") return AugmentMode::kTrain;
  if (v == "eval") return AugmentMode::kEval;
  if (v == "resize") return AugmentMode::kResize;
  return invalid_argument_error("expected train, eval or resize, got '" + std::string(v) + "'");
}

using O = PipelineOptions;
using Add = std::function<void(std::string, std::string, std::string, std::string,
                               std::function<Status(std::string_view, O*)>)>;

// What is read, and how each sample comes out.
void add_sample_options(const Add& add) {
  add("split", "--split", "train", "split of a dataset folder", [](std::string_view v, O* o) {
    o->split = std::string(v);
    return Status();
  });
  add("batch_size", "--batch", "256", "samples per batch", [](std::string_view v, O* o) {
    return parse_number<int>("batch_size", v, 1, 1 << 20, &o->batch_size);
  });
  add("image_size", "--size", "224", "output side in pixels (square)",
      [](std::string_view v, O* o) {
        int n = 0;
        SLUICE_RETURN_IF_ERROR(parse_number<int>("image_size", v, 1, 16384, &n));
        o->sample.width = o->sample.height = n;
        return Status();
      });
  add("augment", "--augment", "train",
      "train (RandomResizedCrop + horizontal flip) | eval (resize to size/0.875, centre crop) | "
      "resize",
      [](std::string_view v, O* o) {
        return parse_enum("augment", parse_augment(v), &o->augment);
      });
  add("order", "--order", "global", "global | quasi | buffer | none",
      [](std::string_view v, O* o) { return parse_enum("order", parse_order(v), &o->order); });
  add("dtype", "--dtype", "float32", "uint8 | float32 | float16 | bfloat16",
      [](std::string_view v, O* o) {
        return parse_enum("dtype", parse_dtype(v), &o->sample.dtype);
      });
  add("layout", "--layout", "NCHW", "NCHW | NHWC", [](std::string_view v, O* o) {
    return parse_enum("layout", parse_layout(v), &o->sample.layout);
  });
  add("mean", "--mean", "0.485,0.456,0.406", "per-channel mean on the 0..1 scale",
      [](std::string_view v, O* o) { return parse_triple("mean", v, o->sample.mean); });
  add("std", "--std", "0.229,0.224,0.225", "per-channel std on the 0..1 scale",
      [](std::string_view v, O* o) {
        SLUICE_RETURN_IF_ERROR(parse_triple("std", v, o->sample.std));
        for (float x : o->sample.std) {
          if (!(x > 0)) return invalid_argument_error("std: every value must be positive");
        }
        return Status();
      });
  add("crop_scale", "--crop-scale", "0.08,1",
      "RandomResizedCrop's share of the image area, min,max (augment train)",
      [](std::string_view v, O* o) {
        std::string text(v);
        for (char& c : text) {
          if (c == ',' || c == '(' || c == ')' || c == '[' || c == ']') c = ' ';
        }
        std::istringstream in(text);
        double lo = 0, hi = 0;
        if (!(in >> lo >> hi) || !(in >> std::ws).eof() || !(lo > 0) || lo > hi || hi > 1) {
          return invalid_argument_error(
              "crop_scale: expected min,max with 0 < min <= max <= 1, got '" + std::string(v) +
              "'");
        }
        o->crop.scale_min = lo;
        o->crop.scale_max = hi;
        return Status();
      });
}

// The epoch's order and this rank's part of it.
void add_plan_options(const Add& add) {
  add("seed", "--seed", "0", "seed of the order and the augmentation",
      [](std::string_view v, O* o) {
        return parse_number<uint64_t>("seed", v, 0, UINT64_MAX, &o->seed);
      });
  add("rank", "--rank", "0", "this process's rank",
      [](std::string_view v, O* o) { return parse_number<int>("rank", v, 0, 1 << 20, &o->rank); });
  add("world_size", "--world-size", "1", "number of ranks", [](std::string_view v, O* o) {
    return parse_number<int>("world_size", v, 1, 1 << 20, &o->world_size);
  });
  add("drop_last", "--drop-last", "true",
      "drop the remainder (true) or pad by wrapping around (false)",
      [](std::string_view v, O* o) { return parse_bool("drop_last", v, &o->drop_last); });
}

// Threads and memory.
void add_engine_options(const Add& add) {
  add("workers", "--workers", "auto", "worker threads, or auto",
      [](std::string_view v, O* o) { return parse_auto("workers", v, &o->workers); });
  add("prefetch", "--prefetch", "auto",
      "batch slots in flight, or auto (as the memory budget allows)",
      [](std::string_view v, O* o) { return parse_auto("prefetch", v, &o->prefetch); });
  add("memory_budget_mb", "--memory-budget", "2048", "MiB for everything in flight",
      [](std::string_view v, O* o) {
        return parse_bytes("memory_budget_mb", v, 1, 1 << 24, 1 << 20, &o->memory_budget);
      });
  add("remote_requests_per_worker", "--requests-per-worker", "4",
      "remote shards: ranged GETs in flight per worker", [](std::string_view v, O* o) {
        return parse_number<int>("remote_requests_per_worker", v, 1, 64,
                                 &o->remote_requests_per_worker);
      });
  add("read_ahead_mb", "--read-ahead", "64",
      "remote shards: MiB of records fetched ahead (within the memory budget)",
      [](std::string_view v, O* o) {
        return parse_bytes("read_ahead_mb", v, 0.0625, 1 << 20, 1 << 20, &o->read_ahead_bytes);
      });
  add("cache_dir", "--cache-dir", "",
      "remote shards: keep whole shards in this folder after first use (LRU)",
      [](std::string_view v, O* o) {
        o->cache_dir = std::string(v);
        return Status();
      });
  add("cache_size_gb", "--cache-size", "100", "GiB the cache folder may hold",
      [](std::string_view v, O* o) {
        return parse_bytes("cache_size_gb", v, 1e-6, 1 << 20, 1 << 30, &o->cache_bytes);
      });
}

// Delivery to a GPU, and decoding there.
void add_device_options(const Add& add) {
  add("device", "--device", "cpu",
      "where batches are delivered: cpu (host memory) | cuda | cuda:N (pinned ring, copies on "
      "their own stream)",
      [](std::string_view v, O* o) {
        return parse_enum("device", device::parse_device(v), &o->device);
      });
  add("gpu_augment", "--gpu-augment", "auto",
      "on a CUDA device: crop/resize/normalise/cast in the fused GPU kernel after the CPU decode "
      "(auto: where sluice's kernel library loads) | on | off",
      [](std::string_view v, O* o) {
        return parse_enum("gpu_augment", parse_use(v), &o->gpu_augment);
      });
  add("gpu_decode", "--gpu-decode", "auto",
      "with the GPU kernel: decode JPEGs with nvJPEG (hardware engine, then CUDA cores; the CPU "
      "for the rest) | on | off (auto: where nvJPEG loads)",
      [](std::string_view v, O* o) {
        return parse_enum("gpu_decode", parse_use(v), &o->gpu_decode);
      });
  add("hardware_share", "--hardware-share", "0.65",
      "share of JPEGs offered to nvJPEG's hardware engine, or auto (tuned from latency: tiers, "
      "so pixels, then depend on timing)",
      [](std::string_view v, O* o) {
        if (v == "auto") {
          o->hardware_share = -1;
          return Status();
        }
        return parse_number<double>("hardware_share", v, 0, 1, &o->hardware_share);
      });
  add("device_memory_budget_mb", "--device-memory-budget", "4096",
      "MiB of device memory for the ring (with --device cuda)", [](std::string_view v, O* o) {
        return parse_bytes("device_memory_budget_mb", v, 1, 1 << 24, 1 << 20,
                           &o->device_memory_budget);
      });
}

// Bad samples, the orders' knobs, decoding and the records' keys.
void add_record_options(const Add& add) {
  add("on_error", "--on-error", "warn", "a bad sample: fail | skip | warn",
      [](std::string_view v, O* o) {
        return parse_enum("on_error", parse_error_policy(v), &o->on_error);
      });
  add("quasi_block", "--quasi-block", "64", "records per block (order quasi)",
      [](std::string_view v, O* o) {
        return parse_number<int>("quasi_block", v, 1, 1 << 24, &o->quasi_block);
      });
  add("shuffle_buffer", "--shuffle-buffer", "10000", "shuffle buffer size (order buffer)",
      [](std::string_view v, O* o) {
        return parse_number<int>("shuffle_buffer", v, 1, 1 << 30, &o->shuffle_buffer);
      });
  add("crop_decode", "--crop-decode", "true", "decode only the crop window at reduced DCT scale",
      [](std::string_view v, O* o) { return parse_bool("crop_decode", v, &o->crop_decode); });
  add("image_key", "--image-key", "",
      "feature holding the encoded image (empty: detect the layout)", [](std::string_view v, O* o) {
        o->keys.image = std::string(v);
        return Status();
      });
  add("label_key", "--label-key", "image/class/label", "feature holding the label (with image_key)",
      [](std::string_view v, O* o) {
        o->keys.label = std::string(v);
        return Status();
      });
}

// The table, in the order --help and the Python docstring list it.
std::vector<OptionSpec> build() {
  std::vector<OptionSpec> s;
  const Add add = [&](std::string name, std::string flag, std::string def, std::string help,
                      std::function<Status(std::string_view, O*)> set) {
    s.push_back(
        {std::move(name), std::move(flag), std::move(def), std::move(help), std::move(set)});
  };
  add_sample_options(add);
  add_plan_options(add);
  add_engine_options(add);
  add_device_options(add);
  add_record_options(add);
  return s;
}

}  // namespace

const std::vector<OptionSpec>& pipeline_option_specs() {
  static const std::vector<OptionSpec> specs = build();
  return specs;
}

Status apply_pipeline_option(std::string_view name, std::string_view value,
                             PipelineOptions* options) {
  for (const OptionSpec& s : pipeline_option_specs()) {
    if (s.name == name) return s.set(value, options);
  }
  return not_found_error("unknown option '" + std::string(name) + "'");
}

}  // namespace sluice
