#include "ops/gpu_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

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
    r.family = m.value("family", r.framework);
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

}  // namespace

const GpuType* find_gpu(const std::vector<GpuType>& catalog, const std::string& name) {
  for (const GpuType& g : catalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

namespace {

Figure measured_figure(const Measurement& m) {
  return Figure{m.images_per_second, true, &m, "measured: " + m.source, Basis::kMeasured};
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

bool in_framework(const Measurement& m, const std::string& framework) {
  return framework == "any" || framework_of(m) == framework;
}

bool same_case(const Measurement& m, const FigureQuery& q) {
  return m.model == q.model && m.task == q.task && precision_class(m.precision) == q.cls &&
         in_framework(m, q.framework);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

// The geometric mean of the 1-GPU figures of `q` (other GPUs, as g has none
// of its own), each scaled to g.
// Returns 0 when no other GPU has one.
double from_other_gpus(const std::vector<GpuType>& catalog, const std::vector<Measurement>& ms,
                       const GpuType& g, FigureQuery q, std::vector<const Measurement*>* used) {
  double log_sum = 0;
  used->clear();
  for (const Measurement& m : ms) {
    const GpuType* other = find_gpu(catalog, m.gpu);
    if (m.gpus != 1 || !other || !same_case(m, q)) continue;
    log_sum += std::log(m.images_per_second * gpu_scale(*other, g, q.cls));
    used->push_back(&m);
  }
  return used->empty() ? 0 : std::exp(log_sum / static_cast<double>(used->size()));
}

const Measurement* find_measured(const std::vector<Measurement>& ms, const FigureQuery& q) {
  for (const Measurement& m : ms) {
    if (m.gpu == q.gpu && m.gpus == q.count && same_case(m, q)) return &m;
  }
  return nullptr;
}

// The framework the query is answered in: its own where some source
// measured the case (any GPU, any count) in it, else "any".
FigureQuery resolve_framework(const std::vector<Measurement>& ms, FigureQuery q) {
  if (q.framework == "any") return q;
  for (const Measurement& m : ms) {
    if (same_case(m, q)) return q;
  }
  q.framework = "any";
  return q;
}

std::string framework_words(const std::string& framework) {
  if (framework == "pytorch") return "PyTorch";
  if (framework == "mxnet") return "MXNet";
  if (framework == "tensorflow") return "TensorFlow";
  if (framework == "tensorrt") return "TensorRT";
  return framework;
}

// This GPU's own smallest multi-GPU measurement, divided back to one GPU.
std::optional<Figure> from_own_multi_gpu(const std::vector<Measurement>& ms, FigureQuery q) {
  const Measurement* best = nullptr;
  for (const Measurement& m : ms) {
    if (m.gpu == q.gpu && m.gpus > 1 && same_case(m, q) && (!best || m.gpus < best->gpus))
      best = &m;
  }
  if (!best) return std::nullopt;
  const Efficiency e = scaling_efficiency(ms, q.gpu, q.cls, best->gpus, q.framework);
  Figure f;
  f.images_per_second = best->images_per_second / (best->gpus * e.value);
  f.basis = Basis::kOwnMultiGpu;
  f.used = {best};
  f.how =
      fmt::format("estimated: the sourced {}-GPU figure ({:.0f}, {}) / ({} x efficiency {:.2f})",
                  best->gpus, best->images_per_second, best->framework, best->gpus, e.value);
  return f;
}

// Per-GPU figures of one family for the case, by GPU and count (one node
// at most: 8 GPUs).
using FamilyTable = std::map<std::string, std::map<int, std::vector<const Measurement*>>>;

double per_gpu(const std::vector<const Measurement*>& v) {
  std::vector<double> x;
  for (const Measurement* m : v) x.push_back(m->images_per_second / m->gpus);
  return geomean(x);
}

std::map<std::string, FamilyTable> families(const std::vector<Measurement>& ms, FigureQuery q) {
  q.framework = "any";  // every framework links GPUs
  std::map<std::string, FamilyTable> out;
  for (const Measurement& m : ms) {
    if (m.gpus > 8 || !same_case(m, q)) continue;
    out[m.family.empty() ? m.framework : m.family][m.gpu][m.gpus].push_back(&m);
  }
  return out;
}

// X's per-GPU figure over Y's within one family: at one GPU where both
// have it, else the smallest count both have, else each's largest.
std::optional<double> family_ratio(const FamilyTable& t, const std::string& x, const std::string& y,
                                   std::string* counts, std::vector<const Measurement*>* used) {
  auto ix = t.find(x), iy = t.find(y);
  if (ix == t.end() || iy == t.end()) return std::nullopt;
  const std::vector<const Measurement*>*vx = nullptr, *vy = nullptr;
  for (const auto& [n, v] : ix->second) {
    if (auto c = iy->second.find(n); c != iy->second.end()) {
      *counts = fmt::format("{} GPU{} each", n, n > 1 ? "s" : "");
      vx = &v, vy = &c->second;
      break;
    }
  }
  if (!vx) {
    vx = &ix->second.rbegin()->second, vy = &iy->second.rbegin()->second;
    *counts = fmt::format("{} vs {} GPUs, per GPU", ix->second.rbegin()->first,
                          iy->second.rbegin()->first);
  }
  used->insert(used->end(), vx->begin(), vx->end());
  used->insert(used->end(), vy->begin(), vy->end());
  return per_gpu(*vx) / per_gpu(*vy);
}

// The framework-matched ratio (see the header): GPUs measured in the
// framework are known; each round adds every GPU a family links to a known
// one, until q.gpu is reached.
std::optional<Figure> from_family_ratios(const std::vector<Measurement>& ms, const FigureQuery& q) {
  if (q.framework == "any") return std::nullopt;
  struct Known {
    double value;
    std::string how;
    std::vector<const Measurement*> used;
  };
  std::map<std::string, Known> known;
  for (const Measurement& m : ms) {
    // The first such entry of a GPU: what find_measured shows for it.
    if (m.gpus == 1 && m.gpu != q.gpu && same_case(m, q) && !known.count(m.gpu)) {
      known[m.gpu] = {m.images_per_second,
                      fmt::format("{} {} {:.0f} (sourced)", m.gpu, framework_words(q.framework),
                                  m.images_per_second),
                      {&m}};
    }
  }
  const auto fams = families(ms, q);
  std::set<std::string> gpus;
  for (const auto& [name, t] : fams) {
    for (const auto& [gpu, counts] : t) gpus.insert(gpu);
  }
  while (!known.empty() && !known.count(q.gpu)) {
    std::map<std::string, Known> round;
    for (const std::string& x : gpus) {
      if (known.count(x)) continue;
      std::vector<double> values;
      std::vector<std::string> hows;
      std::vector<const Measurement*> used;
      for (const auto& [y, k] : known) {
        for (const auto& [name, t] : fams) {
          std::string counts;
          std::vector<const Measurement*> pair;
          if (auto r = family_ratio(t, x, y, &counts, &pair)) {
            used.insert(used.end(), k.used.begin(), k.used.end());
            used.insert(used.end(), pair.begin(), pair.end());
            values.push_back(k.value * *r);
            hows.push_back(
                fmt::format("{} x {}/{} {:.3f} ({}, {})", k.how, x, y, *r, name, counts));
          }
        }
      }
      if (values.empty()) continue;
      std::string how = hows.size() == 1 ? hows[0] : "geometric mean of [";
      for (size_t i = 0; hows.size() > 1 && i < hows.size(); ++i) {
        how += (i ? "; " : "") + hows[i] + (i + 1 == hows.size() ? "]" : "");
      }
      round[x] = {geomean(values), how, used};
    }
    if (round.empty()) break;
    known.insert(round.begin(), round.end());
  }
  auto it = known.find(q.gpu);
  if (it == known.end()) return std::nullopt;
  Figure f;
  f.images_per_second = it->second.value;
  f.basis = Basis::kRatio;
  f.how = "estimated from " + it->second.how;
  for (const Measurement* m : it->second.used) {
    if (std::find(f.used.begin(), f.used.end(), m) == f.used.end()) f.used.push_back(m);
  }
  return f;
}

Result<Figure> one_gpu_figure(const std::vector<GpuType>& catalog,
                              const std::vector<Measurement>& ms, FigureQuery q,
                              bool other_models = true) {
  q.count = 1;
  const std::string wanted = q.framework;  // for another model's figures
  q = resolve_framework(ms, q);
  if (const Measurement* m = find_measured(ms, q)) return measured_figure(*m);
  if (auto own = from_own_multi_gpu(ms, q)) return *own;
  if (auto ratio = from_family_ratios(ms, q)) return *ratio;
  const GpuType* g = find_gpu(catalog, q.gpu);
  if (!g) return not_found_error("GPU type '" + q.gpu + "' is not in the catalogue");
  std::vector<const Measurement*> used;
  if (double v = from_other_gpus(catalog, ms, *g, q, &used); !used.empty()) {
    return Figure{v,
                  false,
                  nullptr,
                  fmt::format("estimated: geometric mean of {} other GPUs' sourced {} figures x "
                              "sqrt(peak ratio x bandwidth ratio)",
                              used.size(), framework_words(q.framework)),
                  Basis::kPeak,
                  used};
  }
  // No GPU has the model: this GPU's figure for another model, by FLOPs.
  SLUICE_ASSIGN_OR_RETURN(double want, model_forward_gflops(q.model));
  for (const char* other : {"resnet50", "resnet18", "seed-cnn"}) {
    if (other == q.model) continue;
    FigureQuery o = q;
    o.model = other;
    o.framework = wanted;
    bool any = false;
    for (const Measurement& m : ms) any = any || (m.model == other && m.task == q.task);
    if (!any || !other_models) continue;
    auto f = one_gpu_figure(catalog, ms, o, /*other_models=*/false);
    if (!f.ok()) continue;
    SLUICE_ASSIGN_OR_RETURN(double have, model_forward_gflops(other));
    f->images_per_second *= have / want;
    f->measured = false;
    if (f->basis == Basis::kMeasured) f->basis = Basis::kPeak, f->used = {f->source};
    f->source = nullptr;
    f->how = fmt::format("{} {} figure ({}) x FLOPs ratio {:.2f}/{:.2f}", q.gpu, other, f->how,
                         have, want);
    return *f;
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

std::string framework_of(const Measurement& m) {
  std::string f = m.framework.substr(0, m.framework.find_first_of(" ,"));
  for (char& c : f) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return f;
}

bool valid_framework(std::string_view f) {
  return f == "pytorch" || f == "mxnet" || f == "tensorflow" || f == "tensorrt" || f == "any";
}

const char* basis_tag(Basis b) {
  switch (b) {
    case Basis::kMeasured: return "sourced";
    case Basis::kOwnMultiGpu: return "est:own-n";
    case Basis::kRatio: return "est:ratio";
    case Basis::kPeak: return "est:peak";
    case Basis::kScaled: return "est:scale";
  }
  return "estimated";
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
                              const std::string& cls, int n, const std::string& framework) {
  if (n <= 1) return {1, true, "one GPU"};
  // count -> (gpu -> efficiencies), from pairs of one table (same source).
  std::map<int, std::map<std::string, std::vector<double>>> pairs;
  for (const Measurement& one : ms) {
    if (one.gpus != 1 || precision_class(one.precision) != cls || !in_framework(one, framework))
      continue;
    for (const Measurement& many : ms) {
      if (many.gpus > 1 && many.source == one.source && many.gpu == one.gpu &&
          many.model == one.model && many.task == one.task && many.precision == one.precision) {
        pairs[many.gpus][one.gpu].push_back(many.images_per_second /
                                            (many.gpus * one.images_per_second));
      }
    }
  }
  if (pairs.empty() && framework != "any") return scaling_efficiency(ms, gpu, cls, n, "any");
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
                          const FigureQuery& query) {
  if (query.count == 1) return one_gpu_figure(catalog, ms, query);
  const FigureQuery q = resolve_framework(ms, query);
  if (const Measurement* m = find_measured(ms, q)) return measured_figure(*m);
  SLUICE_ASSIGN_OR_RETURN(Figure one, one_gpu_figure(catalog, ms, query));
  const Efficiency e = scaling_efficiency(ms, q.gpu, q.cls, q.count, q.framework);
  Figure f;
  f.images_per_second = one.images_per_second * q.count * e.value;
  f.basis = one.measured ? Basis::kScaled : one.basis;
  f.used = one.measured ? std::vector<const Measurement*>{one.source} : one.used;
  f.how = (one.measured ? "from the measured 1-GPU figure; " : one.how + "; ") + e.how;
  return f;
}

Result<LeaveOneOutReport> leave_one_out(const std::vector<GpuType>& catalog,
                                        const std::vector<Measurement>& ms, Hide hide) {
  LeaveOneOutReport r;
  r.hide = hide;
  std::vector<double> errors;
  for (const Measurement& m : ms) {
    if (m.gpus != 1 || !find_gpu(catalog, m.gpu)) continue;
    const std::string framework = framework_of(m);
    std::vector<Measurement> rest;
    for (const Measurement& x : ms) {
      const bool hidden =
          x.gpu == m.gpu && (hide == Hide::kHideGpu || framework_of(x) == framework);
      if (!hidden) rest.push_back(x);
    }
    FigureQuery q{m.gpu, m.model, m.task, precision_class(m.precision), 1, framework};
    auto f = gpu_figure(catalog, rest, q);
    if (!f.ok()) continue;  // no other GPU measured this case
    const double err = std::abs(f->images_per_second / m.images_per_second - 1) * 100;
    r.rows.push_back({&m, f->images_per_second, err, f->basis});
    errors.push_back(err);
  }
  if (errors.empty()) return not_found_error("no measurement can be estimated from the others");
  r.median_error_percent = median(errors);
  r.max_error_percent = *std::max_element(errors.begin(), errors.end());
  return r;
}

std::string format_leave_one_out(const LeaveOneOutReport& r) {
  std::string out =
      fmt::format("{:<10} {:<9} {:<6} {:<6} {:>10} {:>10} {:>7}  {:<9}  {}\n", "gpu", "model",
                  "task", "prec", "published", "estimate", "error", "basis", "framework");
  for (const LeaveOneOut& x : r.rows) {
    const Measurement& m = *x.measurement;
    out += fmt::format("{:<10} {:<9} {:<6} {:<6} {:>10.0f} {:>10.0f} {:>6.1f}%  {:<9}  {}\n", m.gpu,
                       m.model, m.task, m.precision, m.images_per_second, x.estimate,
                       x.error_percent, basis_tag(x.basis), m.framework);
  }
  out += fmt::format(
      "\n{} published 1-GPU figures, each estimated in its own framework with {}: median error "
      "{:.1f} %, max {:.1f} %\n",
      r.rows.size(),
      r.hide == Hide::kHideGpu
          ? "every figure of its GPU hidden"
          : "its GPU's figures in that framework hidden (other frameworks' kept)",
      r.median_error_percent, r.max_error_percent);
  return out;
}

}  // namespace sluice
