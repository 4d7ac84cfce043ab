#include "ops/advise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace sluice {

const char* builtin_catalog_json();  // gpu_catalog.cc, generated

namespace {

using json = nlohmann::json;

const GpuType* find(const std::vector<GpuType>& catalog, const std::string& name) {
  for (const GpuType& g : catalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// Peak tensor throughput for the precision; GPUs without bf16 fall back to
// fp16 (what autocast would have to use there), `used` says which.
double peak(const GpuType& g, const std::string& amp, std::string* used) {
  if (amp == "bf16" && g.bf16_tflops > 0) {
    *used = "bf16";
    return g.bf16_tflops;
  }
  if (amp == "bf16" || amp == "fp16") {
    *used = "fp16";
    return g.fp16_tflops;
  }
  if (g.tf32_tflops > 0) {
    *used = "tf32";
    return g.tf32_tflops;
  }
  *used = "fp32";
  return g.fp32_tflops;
}

std::string duration(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

}  // namespace

Result<std::vector<GpuType>> parse_gpu_catalog(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("gpus") || !j["gpus"].is_array()) {
    return data_loss_error(std::string(name) + ": expected {\"gpus\": [...]}");
  }
  std::vector<GpuType> out;
  for (const json& g : j["gpus"]) {
    try {
      GpuType t;
      t.name = g.at("name").get<std::string>();
      t.memory_gb = g.at("memory_gb").get<double>();
      t.bandwidth_gbs = g.at("bandwidth_gbs").get<double>();
      t.fp16_tflops = g.at("fp16_tflops").get<double>();
      t.bf16_tflops = g.at("bf16_tflops").get<double>();
      t.tf32_tflops = g.at("tf32_tflops").get<double>();
      t.fp32_tflops = g.at("fp32_tflops").get<double>();
      t.source = g.at("source").get<std::string>();
      if (t.bandwidth_gbs <= 0 || t.fp16_tflops <= 0 || t.fp32_tflops <= 0) {
        return data_loss_error(std::string(name) + ": " + t.name +
                               ": bandwidth and fp16/fp32 rates must be positive");
      }
      out.push_back(std::move(t));
    } catch (const json::exception& e) {
      return data_loss_error(std::string(name) +
                             ": a GPU entry lacks a field or has a wrong type (" + e.what() + ")");
    }
  }
  return out;
}

Result<std::vector<GpuType>> builtin_gpu_catalog() {
  return parse_gpu_catalog(builtin_catalog_json(), "built-in gpus.json");
}

Result<std::map<std::string, double>> parse_prices(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("per_gpu_hour") || !j["per_gpu_hour"].is_object()) {
    return data_loss_error(std::string(name) +
                           ": expected {\"per_gpu_hour\": {\"GPU\": price, ...}}");
  }
  std::map<std::string, double> out;
  for (const auto& [gpu, v] : j["per_gpu_hour"].items()) {
    if (v.is_null()) continue;
    if (!v.is_number() || v.get<double>() < 0) {
      return data_loss_error(std::string(name) + ": price of " + gpu + " is not a number >= 0");
    }
    out[gpu] = v.get<double>();
  }
  return out;
}

Result<double> model_forward_gflops(std::string_view model) {
  // Multiply-adds at 224x224, x2: torchvision's ResNets 1.82 and 4.11
  // GMACs; seed-cnn (conv 3x3x3->64, pool 2, dense 112*112*64->1024,
  // dense 1024->classes) 0.087 + 0.822 GMACs.
  if (model == "resnet18") return 3.64;
  if (model == "resnet50") return 8.22;
  if (model == "seed-cnn") return 1.82;
  return invalid_argument_error("unknown model '" + std::string(model) +
                                "' (resnet18, resnet50, seed-cnn)");
}

namespace {

// How every row is derived, in words, for the report.
std::vector<std::string> derivation(const AdviseInput& in, double anchor_gflops,
                                    double model_gflops) {
  std::vector<std::string> d;
  d.push_back(
      fmt::format("GPU images/s: the anchor ({} training {} in {} at {:.0f} images/s) scaled by "
                  "sqrt(peak {} TFLOPS ratio x "
                  "memory bandwidth ratio) to each GPU, by the FLOPs ratio {} / {} ({:.2f} / "
                  "{:.2f} GFLOPs forward), and by the "
                  "GPU count (linear, data parallel)",
                  in.anchor_gpu, in.anchor_model, in.anchor_amp, in.anchor_images_per_second,
                  in.amp == "off" ? "tf32/fp32" : in.amp, in.anchor_model, in.model, anchor_gflops,
                  model_gflops));
  d.push_back(
      fmt::format("CPU cores needed: GPU images/s / {:.0f} images/s per core, the rate your "
                  "`sluice bench` measured on your data",
                  in.cpu_images_per_core));
  d.push_back(in.cores > 0 ? fmt::format("input-bound: cores needed > {} cores", in.cores)
                           : "input-bound: not judged (give --cores)");
  d.push_back(fmt::format("epoch: {} images at the slower of the GPUs and {} cores of input",
                          in.images, in.cores > 0 ? std::to_string(in.cores) : "enough"));
  d.push_back(in.prices.empty() ? "cost: no prices given (--prices FILE, per GPU-hour)"
                                : "cost: epoch hours x GPU count x your price per GPU-hour");
  return d;
}

// `n` GPUs of type g at `one` images/s each, against the input's cores.
AdviseRow advise_row(const AdviseInput& in, const GpuType& g, const std::string& precision,
                     double one, int n) {
  AdviseRow row;
  row.gpu = g.name;
  row.count = n;
  row.precision = precision;
  row.gpu_images_per_second = one * n;
  row.cores_needed = row.gpu_images_per_second / in.cpu_images_per_core;
  const double input_rate =
      in.cores > 0 ? in.cores * in.cpu_images_per_core : row.gpu_images_per_second;
  row.input_bound = in.cores > 0 && row.cores_needed > in.cores;
  const double rate = std::min(row.gpu_images_per_second, input_rate);
  row.epoch_seconds = rate > 0 ? static_cast<double>(in.images) / rate : INFINITY;
  if (auto price = in.prices.find(g.name); price != in.prices.end()) {
    row.cost_per_epoch = row.epoch_seconds / 3600 * n * price->second;
  }
  return row;
}

}  // namespace

Result<AdviseReport> advise(const AdviseInput& in) {
  if (in.cpu_images_per_core <= 0) {
    return invalid_argument_error(
        "the bench figures give no images/s per core (run `sluice bench --json`)");
  }
  if (in.amp != "off" && in.amp != "fp16" && in.amp != "bf16") {
    return invalid_argument_error("--amp must be off, fp16 or bf16");
  }
  const GpuType* anchor = find(in.catalog, in.anchor_gpu);
  if (!anchor) return not_found_error("anchor GPU '" + in.anchor_gpu + "' is not in the catalogue");
  SLUICE_ASSIGN_OR_RETURN(double model_gflops, model_forward_gflops(in.model));
  SLUICE_ASSIGN_OR_RETURN(double anchor_gflops, model_forward_gflops(in.anchor_model));
  std::string anchor_used;
  const double anchor_peak = peak(*anchor, in.anchor_amp, &anchor_used);
  AdviseReport r;
  r.derivation = derivation(in, anchor_gflops, model_gflops);
  for (const std::string& name : in.only) {
    if (!find(in.catalog, name))
      return not_found_error("GPU type '" + name + "' is not in the catalogue");
  }
  for (const GpuType& g : in.catalog) {
    if (!in.only.empty() && std::find(in.only.begin(), in.only.end(), g.name) == in.only.end())
      continue;
    std::string used;
    const double p = peak(g, in.amp, &used);
    const double scale = std::sqrt((p / anchor_peak) * (g.bandwidth_gbs / anchor->bandwidth_gbs));
    const double one = in.anchor_images_per_second * scale * (anchor_gflops / model_gflops);
    for (int n : in.counts) r.rows.push_back(advise_row(in, g, used, one, n));
  }
  return r;
}

std::string format_advise_text(const AdviseReport& r) {
  std::string out = fmt::format("{:<12} {:>3} {:>10} {:>6} {:>12} {:>8} {:>10} {:>12}\n", "gpu",
                                "n", "precision", "", "GPU img/s", "cores", "epoch", "cost/epoch");
  for (const AdviseRow& row : r.rows) {
    out += fmt::format("{:<12} {:>3} {:>10} {:>6} {:>12.0f} {:>8.1f} {:>10} {:>12}\n", row.gpu,
                       row.count, row.precision, row.input_bound ? "INPUT" : "",
                       row.gpu_images_per_second, row.cores_needed, duration(row.epoch_seconds),
                       row.cost_per_epoch ? fmt::format("{:.2f}", *row.cost_per_epoch) : "-");
  }
  out +=
      "\nINPUT = input-bound: the CPU cores given cannot feed these GPUs with this pipeline.\nHow "
      "each column is derived:\n";
  for (const std::string& d : r.derivation) out += "  - " + d + "\n";
  return out;
}

}  // namespace sluice
