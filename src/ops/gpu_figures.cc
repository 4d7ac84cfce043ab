#include "ops/gpu_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "ops/advise.h"

namespace sluice {

const char* builtin_catalog_json();  // gpu_catalog.cc, generated

namespace {

using json = nlohmann::json;

Result<Measurement> parse_measurement(const json& m, std::string_view name, size_t i) {
  const std::string where = fmt::format("{}: measurements[{}]", name, i);
  try {
    Measurement r;
    r.gpu = m.at("gpu").get<std::string>();
    r.model = m.at("model").get<std::string>();
    r.task = m.at("task").get<std::string>();
    r.precision = m.at("precision").get<std::string>();
    r.gpus = m.at("gpus").get<int>();
    r.images_per_second = m.at("images_per_second").get<double>();
    r.batch_per_gpu = m.at("batch_per_gpu").is_null() ? 0 : m.at("batch_per_gpu").get<int>();
    r.framework = m.at("framework").get<std::string>();
    r.source = m.at("source").get<std::string>();
    r.date = m.at("date").get<std::string>();
    if (r.gpus < 1 || !(r.images_per_second > 0) || r.batch_per_gpu < 0) {
      return data_loss_error(where +
                             ": gpus, images_per_second and batch_per_gpu must be positive");
    }
    if (r.task != "train" && r.task != "infer") {
      return data_loss_error(where + ": task '" + r.task + "' is not train or infer");
    }
    if (precision_class(r.precision).empty()) {
      return data_loss_error(where + ": precision '" + r.precision +
                             "' is not mixed, tf32, fp32 or int8");
    }
    if (r.source.empty()) return data_loss_error(where + ": a figure needs its source");
    return r;
  } catch (const json::exception& e) {
    return data_loss_error(where + ": a field is missing or has a wrong type (" + e.what() + ")");
  }
}

const GpuType* find_gpu(const std::vector<GpuType>& catalog, const std::string& name) {
  for (const GpuType& g : catalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The peak that the precision class can use; see the header for "off".
double class_peak(const GpuType& g, const std::string& cls) {
  if (cls == "off") {
    return g.tf32_tflops > 0 ? std::sqrt(g.tf32_tflops * g.fp32_tflops) : g.fp32_tflops;
  }
  if (cls == "mixed" && g.bf16_tflops > 0) return std::max(g.bf16_tflops, g.fp16_tflops);
  return g.fp16_tflops;  // mixed without bf16, and int8 (2x fp16 on every GPU listed)
}

double gpu_scale(const GpuType& from, const GpuType& to, const std::string& cls) {
  return std::sqrt(class_peak(to, cls) / class_peak(from, cls) *
                   (to.bandwidth_gbs / from.bandwidth_gbs));
}

bool same_case(const Measurement& m, const FigureQuery& q) {
  return m.model == q.model && m.task == q.task && precision_class(m.precision) == q.cls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The geometric mean of the 1-GPU figures of `q` (other GPUs, as g has none
// of its own), each scaled to g.
// Returns 0 when no other GPU has one.
double from_other_gpus(const std::vector<GpuType>& catalog, const std::vector<Measurement>& ms,
                       const GpuType& g, FigureQuery q, int* used) {
  double log_sum = 0;
  *used = 0;
  for (const Measurement& m : ms) {
    const GpuType* other = find_gpu(catalog, m.gpu);
    if (m.gpus != 1 || !other || !same_case(m, q)) continue;
    log_sum += std::log(m.images_per_second * gpu_scale(*other, g, q.cls));
    ++*used;
  }
  return *used ? std::exp(log_sum / *used) : 0;
}

const Measurement* find_measured(const std::vector<Measurement>& ms, const FigureQuery& q) {
  for (const Measurement& m : ms) {
    if (m.gpu == q.gpu && m.gpus == q.count && same_case(m, q)) return &m;
  }
  return nullptr;
}

// This GPU's own smallest multi-GPU measurement, divided back to one GPU.
std::optional<Figure> from_own_multi_gpu(const std::vector<Measurement>& ms, FigureQuery q) {
  const Measurement* best = nullptr;
  for (const Measurement& m : ms) {
    if (m.gpu == q.gpu && m.gpus > 1 && same_case(m, q) && (!best || m.gpus < best->gpus))
      best = &m;
  }
  if (!best) return std::nullopt;
  const Efficiency e = scaling_efficiency(ms, q.gpu, q.cls, best->gpus);
  Figure f;
  f.images_per_second = best->images_per_second / (best->gpus * e.value);
  f.how =
      fmt::format("estimated: the sourced {}-GPU figure ({:.0f}, {}) / ({} x efficiency {:.2f})",
                  best->gpus, best->images_per_second, best->framework, best->gpus, e.value);
  return f;
}

Result<Figure> one_gpu_figure(const std::vector<GpuType>& catalog,
                              const std::vector<Measurement>& ms, FigureQuery q) {
  q.count = 1;
  if (const Measurement* m = find_measured(ms, q)) {
    return Figure{m->images_per_second, true, m, "measured: " + m->source};
  }
  if (auto own = from_own_multi_gpu(ms, q)) return *own;
  const GpuType* g = find_gpu(catalog, q.gpu);
  if (!g) return not_found_error("GPU type '" + q.gpu + "' is not in the catalogue");
  int used = 0;
  if (double v = from_other_gpus(catalog, ms, *g, q, &used); used > 0) {
    return Figure{v, false, nullptr,
                  fmt::format("estimated: geometric mean of {} other GPUs' sourced figures x "
                              "sqrt(peak ratio x bandwidth ratio)",
                              used)};
  }
  SLUICE_ASSIGN_OR_RETURN(double want, model_forward_gflops(q.model));
  for (const char* other : {"resnet50", "resnet18", "seed-cnn"}) {
    if (other == q.model) continue;
    FigureQuery o = q;
    o.model = other;
    if (double v = from_other_gpus(catalog, ms, *g, o, &used); used > 0) {
      SLUICE_ASSIGN_OR_RETURN(double have, model_forward_gflops(other));
      return Figure{v * have / want, false, nullptr,
                    fmt::format("estimated: {} GPUs' sourced {} figures x sqrt(peak ratio x "
                                "bandwidth ratio) x FLOPs ratio {:.2f}/{:.2f}",
                                used, other, have, want)};
    }
  }
  return not_found_error(fmt::format("no source measures {} {} at precision class {}, on any GPU",
                                     q.model, q.task, q.cls));
}

}  // namespace

std::string precision_class(std::string_view p) {
  if (p == "fp32" || p == "tf32") return "off";
  if (p == "mixed" || p == "int8") return std::string(p);
  return "";
}

std::string amp_class(std::string_view amp) {
  if (amp == "off") return "off";
  if (amp == "fp16" || amp == "bf16") return "mixed";
  if (amp == "int8") return "int8";
  return "";
}

Result<std::vector<Measurement>> parse_measurements(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return data_loss_error(std::string(name) + ": not a JSON object");
  }
  std::vector<Measurement> out;
  if (!j.contains("measurements")) return out;
  if (!j["measurements"].is_array()) {
    return data_loss_error(std::string(name) + ": measurements: expected an array");
  }
  for (size_t i = 0; i < j["measurements"].size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(Measurement m, parse_measurement(j["measurements"][i], name, i));
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<Measurement>> builtin_measurements() {
  return parse_measurements(builtin_catalog_json(), "built-in gpus.json");
}

Efficiency scaling_efficiency(const std::vector<Measurement>& ms, const std::string& gpu,
                              const std::string& cls, int n) {
  if (n <= 1) return {1, true, "one GPU"};
  // count -> (gpu -> efficiencies), from pairs of one table (same source).
  std::map<int, std::map<std::string, std::vector<double>>> pairs;
  for (const Measurement& one : ms) {
    if (one.gpus != 1 || precision_class(one.precision) != cls) continue;
    for (const Measurement& many : ms) {
      if (many.gpus > 1 && many.source == one.source && many.gpu == one.gpu &&
          many.model == one.model && many.task == one.task && many.precision == one.precision) {
        pairs[many.gpus][one.gpu].push_back(many.images_per_second /
                                            (many.gpus * one.images_per_second));
      }
    }
  }
  auto at = [&](int count, bool* own) {
    const auto& by_gpu = pairs.at(count);
    *own = by_gpu.count(gpu) > 0;
    if (*own) return median(by_gpu.at(gpu));
    std::vector<double> all;
    for (const auto& [g, v] : by_gpu) all.insert(all.end(), v.begin(), v.end());
    return median(all);
  };
  bool own = false;
  if (pairs.empty()) return {1, false, "no sourced multi-GPU pairs: linear (an estimate)"};
  if (pairs.count(n)) {
    double e = at(n, &own);
    return {e, own,
            fmt::format("{} GPUs at {:.0f} % per GPU, from {} sourced {}-GPU/1-GPU pairs", n,
                        e * 100, own ? gpu + "'s" : "all GPUs'", n)};
  }
  auto hi = pairs.upper_bound(n);
  if (hi == pairs.end()) {
    const int top = pairs.rbegin()->first;
    double e = at(top, &own);
    return {e, false,
            fmt::format("estimate: {} GPUs (several nodes) at the {}-GPU efficiency {:.0f} %, no "
                        "further loss across nodes assumed",
                        n, top, e * 100)};
  }
  const int lo_n = hi == pairs.begin() ? 1 : std::prev(hi)->first;
  const double lo = lo_n == 1 ? 1.0 : at(lo_n, &own), up = at(hi->first, &own);
  const double t = (std::log2(n) - std::log2(lo_n)) / (std::log2(hi->first) - std::log2(lo_n));
  const double e = lo + t * (up - lo);
  return {e, false,
          fmt::format("estimate: {:.0f} % per GPU, interpolated between sourced {} and {} GPUs",
                      e * 100, lo_n, hi->first)};
}

Result<Figure> gpu_figure(const std::vector<GpuType>& catalog, const std::vector<Measurement>& ms,
                          const FigureQuery& q) {
  if (const Measurement* m = find_measured(ms, q)) {
    return Figure{m->images_per_second, true, m, "measured: " + m->source};
  }
  SLUICE_ASSIGN_OR_RETURN(Figure one, one_gpu_figure(catalog, ms, q));
  if (q.count == 1) return one;
  const Efficiency e = scaling_efficiency(ms, q.gpu, q.cls, q.count);
  Figure f;
  f.images_per_second = one.images_per_second * q.count * e.value;
  f.how = (one.measured ? "from the measured 1-GPU figure; " : one.how + "; ") + e.how;
  return f;
}

Result<LeaveOneOutReport> leave_one_out(const std::vector<GpuType>& catalog,
                                        const std::vector<Measurement>& ms) {
  LeaveOneOutReport r;
  std::vector<double> errors;
  for (const Measurement& m : ms) {
    if (m.gpus != 1 || !find_gpu(catalog, m.gpu)) continue;
    std::vector<Measurement> rest;
    for (const Measurement& x : ms) {
      if (x.gpu != m.gpu) rest.push_back(x);
    }
    FigureQuery q{m.gpu, m.model, m.task, precision_class(m.precision), 1};
    auto f = gpu_figure(catalog, rest, q);
    if (!f.ok()) continue;  // no other GPU measured this case
    const double err = std::abs(f->images_per_second / m.images_per_second - 1) * 100;
    r.rows.push_back({&m, f->images_per_second, err});
    errors.push_back(err);
  }
  if (errors.empty()) return not_found_error("no measurement can be estimated from the others");
  r.median_error_percent = median(errors);
  r.max_error_percent = *std::max_element(errors.begin(), errors.end());
  return r;
}

std::string format_leave_one_out(const LeaveOneOutReport& r) {
  std::string out =
      fmt::format("{:<10} {:<9} {:<6} {:<6} {:>10} {:>10} {:>7}  {}\n", "gpu", "model", "task",
                  "prec", "published", "estimate", "error", "framework");
  for (const LeaveOneOut& x : r.rows) {
    const Measurement& m = *x.measurement;
    out += fmt::format("{:<10} {:<9} {:<6} {:<6} {:>10.0f} {:>10.0f} {:>6.1f}%  {}\n", m.gpu,
                       m.model, m.task, m.precision, m.images_per_second, x.estimate,
                       x.error_percent, m.framework);
  }
  out += fmt::format(
      "\n{} published 1-GPU figures, each estimated with every figure of its own GPU hidden: "
      "median error {:.1f} %, max {:.1f} %\n",
      r.rows.size(), r.median_error_percent, r.max_error_percent);
  return out;
}

}  // namespace sluice
