#include "ops/advise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace sluice {

const char* builtin_catalog_json();  // gpu_catalog.cc, generated

namespace {

using json = nlohmann::json;

std::string duration(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// j[key] when it is a number above 0.
std::optional<double> positive(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !(it->get<double>() > 0)) return std::nullopt;
  return it->get<double>();
}

}  // namespace

Result<BenchPoint> parse_bench_point(std::string_view text, std::string_view name) {
  json j = json::parse(text, nullptr, false);
  auto ips = positive(j, "images_per_second"), cores = positive(j, "cpu_cores_busy");
  if (!ips || !cores) {
    return data_loss_error(std::string(name) +
                           ": not a `sluice bench --json` file (images_per_second and "
                           "cpu_cores_busy, numbers above 0)");
  }
  BenchPoint p{*cores, *ips, 0};
  if (auto stages = j.find("stages"); stages != j.end() && stages->is_object()) {
    if (auto read = stages->find("read"); read != stages->end()) {
      auto items = positive(*read, "items"), bytes = positive(*read, "bytes");
      if (items && bytes) p.image_bytes = *bytes / *items;
    }
  }
  return p;
}

Result<double> parse_disk_report(std::string_view text, std::string_view name) {
  auto mbps = positive(json::parse(text, nullptr, false), "data_read_mb_per_second");
  if (!mbps) {
    return data_loss_error(std::string(name) +
                           ": not a `sluice doctor --data DIR --json` report with "
                           "data_read_mb_per_second > 0");
  }
  return *mbps;
}

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

Result<CpuFit> fit_cpu(const std::vector<std::pair<double, double>>& points) {
  for (const auto& [cores, ips] : points) {
    if (!(cores > 0) || !(ips > 0)) {
      return invalid_argument_error("bench figures need cpu_cores_busy and images_per_second > 0");
    }
  }
  if (points.empty()) return invalid_argument_error("no bench figures");
  CpuFit f;
  f.points = static_cast<int>(points.size());
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) mx += x, my += y;
  mx /= points.size();
  my /= points.size();
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
  // Under 0.25 cores of spread the slope means nothing: use the mean rate
  // per core, as for one file.
  if (points.size() < 2 || sxx < 0.25 * 0.25) {
    f.per_core = my / mx;
    f.points = 1;
    return f;
  }
  f.per_core = sxy / sxx;
  f.intercept = my - f.per_core * mx;
  if (!(f.per_core > 0)) {
    return invalid_argument_error(
        "images/s does not rise with CPU cores across the bench files: the pipeline is bound "
        "by something else (disk? one slow stage?); give files from runs with different "
        "--workers");
  }
  return f;
}

Result<MemoryModel> memory_model(std::string_view model, std::string_view task,
                                 std::string_view amp) {
  // Per image at 224x224: the elements of every conv output (counted from
  // torchvision's layer shapes: 11.1 M for resnet50, 2.5 M for resnet18;
  // seed-cnn's conv and pool 4.0 M), and parameters (25.6 M, 11.7 M,
  // 823 M). Training keeps about two tensors of each conv's output size for
  // the backward pass (the BatchNorm input and the in-place ReLU output the
  // next conv reads); inference one. Fixed: weights, gradients and SGD
  // momentum in fp32, and 1.5 GB for the CUDA context and cuDNN workspace.
  // Check: NVIDIA's ResNet-50 recipes run batch 112 in fp32 and 256 in mixed
  // precision on a 16 GB V100; this model says 160 and 320 fit.
  double elements = 0, params = 0;
  if (model == "resnet50") elements = 11.1e6, params = 25.6e6;
  if (model == "resnet18") elements = 2.5e6, params = 11.7e6;
  if (model == "seed-cnn") elements = 4.0e6, params = 823e6;
  if (params == 0) return invalid_argument_error("unknown model '" + std::string(model) + "'");
  const double bytes = amp == "off" ? 4 : amp == "int8" ? 1 : 2;
  const bool train = task == "train";
  return MemoryModel{(train ? 2 : 1) * elements * bytes, params * (train ? 12 : 4) + 1.5e9};
}

namespace {

// How every row is derived, in words, for the report.
std::vector<std::string> derivation(const AdviseInput& in, const MemoryModel& mem) {
  std::vector<std::string> d;
  d.push_back(
      in.anchor
          ? fmt::format("GPU images/s: re-anchored on your run ({}: {} {} in {} on {} x "
                        "{} at {:.0f} images/s): your per-GPU rate x each GPU's catalogue "
                        "figure / the catalogue figure of your GPU",
                        in.anchor->from, in.anchor->model, in.task, in.anchor->amp,
                        in.anchor->world_size, in.anchor->gpu, in.anchor->images_per_second)
          : fmt::format("GPU images/s, {} figures: 'sourced' = a published figure, exactly as "
                        "its source printed it (the numbered notes); 'est:' = what no source "
                        "covers in {}: est:ratio = a GPU measured in it x the two GPUs' ratio "
                        "in a family of comparable measurements (an MLPerf round), est:peak = "
                        "other GPUs' figures x sqrt(peak ratio x bandwidth ratio), est:scale = "
                        "the sourced 1-GPU figure x n x sourced efficiency, est:own-n = this "
                        "GPU's sourced n-GPU figure / (n x efficiency); each 1-GPU estimate "
                        "says how below (`sluice advise --leave-one-out`: the estimator's "
                        "error on the published figures)",
                        in.framework, in.framework));
  d.push_back(in.cpu.points > 1
                  ? fmt::format("CPU cores needed: (GPU images/s - {:.0f}) / {:.0f} images/s per "
                                "core, a least-squares line through your {} bench files",
                                in.cpu.intercept, in.cpu.per_core, in.cpu.points)
                  : fmt::format("CPU cores needed: GPU images/s / {:.0f} images/s per core, the "
                                "rate your `sluice bench` measured on your data",
                                in.cpu.per_core));
  d.push_back(in.cores > 0 ? fmt::format("INPUT (input-bound): cores needed > {} cores", in.cores)
                           : "input-bound: not judged (give --cores)");
  d.push_back(in.disk_mb_per_second > 0
                  ? fmt::format("disk: {:.0f} MB/s / {:.0f} KB per image = {:.0f} images/s",
                                in.disk_mb_per_second, in.image_bytes / 1e3,
                                in.disk_mb_per_second * 1e6 / in.image_bytes)
                  : "disk: not judged (give --disk DOCTOR.json or --disk-mbps)");
  d.push_back(
      fmt::format("bound: the slowest of GPU, CPU ({}) and disk; epoch: {} images at "
                  "that rate",
                  in.cores > 0 ? std::to_string(in.cores) + " cores" : "enough cores", in.images));
  d.push_back(fmt::format(
      "memory (estimate): {:.0f} MB per image + {:.1f} GB fixed; fits = batch {} per GPU fits",
      mem.bytes_per_image / 1e6, mem.fixed_bytes / 1e9, in.batch));
  d.push_back(in.prices.empty()
                  ? "cost: no prices given (--prices FILE, per GPU-hour)"
                  : fmt::format("cost: epoch hours x GPU count x your price per GPU-hour; "
                                "total = {} epochs",
                                in.epochs));
  return d;
}

struct Rates {
  double gpu = 0, cpu = std::numeric_limits<double>::infinity(),
         disk = std::numeric_limits<double>::infinity();
};

// Fills the input, bound, epoch, memory and cost columns of a row whose GPU
// figure is set.
void finish_row(const AdviseInput& in, const GpuType& g, const MemoryModel& mem, AdviseRow* row) {
  const int n = row->count;
  Rates r;
  r.gpu = row->gpu_images_per_second;
  row->cores_needed = std::max(0.0, (r.gpu - in.cpu.intercept) / in.cpu.per_core);
  if (in.cores > 0) r.cpu = in.cpu.intercept + in.cores * in.cpu.per_core;
  if (in.disk_mb_per_second > 0) r.disk = in.disk_mb_per_second * 1e6 / in.image_bytes;
  row->input_bound = in.cores > 0 && row->cores_needed > in.cores;
  const double rate = std::min({r.gpu, r.cpu, r.disk});
  row->bound_by = rate == r.gpu ? "gpu" : rate == r.cpu ? "cpu" : "disk";
  row->epoch_seconds = rate > 0 ? static_cast<double>(in.images) / rate : INFINITY;
  const double free_bytes = g.memory_gb * 1e9 - mem.fixed_bytes;
  row->max_batch = free_bytes > 0 ? static_cast<int>(free_bytes / mem.bytes_per_image) : 0;
  row->fits = in.batch <= row->max_batch;
  if (auto price = in.prices.find(g.name); price != in.prices.end()) {
    row->cost_per_epoch = row->epoch_seconds / 3600 * n * price->second;
    row->cost_total = *row->cost_per_epoch * in.epochs;
  }
}

// The GPU figure for n GPUs of type g: the catalogue's, or re-anchored on
// the user's run.
Result<Figure> row_figure(const AdviseInput& in, const GpuType& g, int n) {
  const std::string cls = amp_class(in.amp);
  FigureQuery q{g.name, in.model, in.task, cls, n, in.framework};
  if (!in.anchor) return gpu_figure(in.catalog, in.measurements, q);
  const UserAnchor& a = *in.anchor;
  if (a.gpu == g.name && a.model == in.model && amp_class(a.amp) == cls && a.world_size == n) {
    return Figure{a.images_per_second, false, nullptr, "your run, exactly"};
  }
  const Efficiency ea =
      scaling_efficiency(in.measurements, a.gpu, amp_class(a.amp), a.world_size, in.framework);
  const double user_one = a.images_per_second / (a.world_size * ea.value);
  SLUICE_ASSIGN_OR_RETURN(Figure mine,
                          gpu_figure(in.catalog, in.measurements,
                                     {a.gpu, a.model, in.task, amp_class(a.amp), 1, in.framework}));
  q.count = 1;
  SLUICE_ASSIGN_OR_RETURN(Figure theirs, gpu_figure(in.catalog, in.measurements, q));
  const Efficiency e = scaling_efficiency(in.measurements, g.name, cls, n, in.framework);
  Figure f;
  f.images_per_second =
      user_one * (theirs.images_per_second / mine.images_per_second) * n * e.value;
  f.how = fmt::format("re-anchored: your {:.0f} images/s per GPU x {:.3f} (catalogue ratio); {}",
                      user_one, theirs.images_per_second / mine.images_per_second, e.how);
  return f;
}

Status check_input(const AdviseInput& in) {
  if (!(in.cpu.per_core > 0)) {
    return invalid_argument_error(
        "the bench figures give no images/s per core (run `sluice bench --json`)");
  }
  if (amp_class(in.amp).empty())
    return invalid_argument_error("--amp must be off, fp16, bf16 or int8");
  if (!valid_framework(in.framework)) {
    return invalid_argument_error(
        "--framework must be pytorch, mxnet, tensorflow, tensorrt or any");
  }
  if (in.task != "train" && in.task != "infer") {
    return invalid_argument_error("--task must be train or infer");
  }
  if (in.amp == "int8" && in.task != "infer") {
    return invalid_argument_error("--amp int8 is for --task infer (TensorRT INT8 figures)");
  }
  if (in.batch < 1 || in.epochs < 1) {
    return invalid_argument_error("--batch and --epochs must be at least 1");
  }
  for (const std::string& name : in.only) {
    if (!find_gpu(in.catalog, name))
      return not_found_error("GPU type '" + name + "' is not in the catalogue");
  }
  if (in.anchor && !find_gpu(in.catalog, in.anchor->gpu)) {
    return not_found_error("GPU type '" + in.anchor->gpu +
                           "' (of your run) is not in the catalogue");
  }
  return Status();
}

// The note number for a measured row's source, adding it when new.
int note_for(const Measurement& m, std::vector<std::string>* sources) {
  const std::string text =
      fmt::format("{} ({}, {}, {} GPU{}, batch {}/GPU, {})", m.source, m.framework, m.precision,
                  m.gpus, m.gpus > 1 ? "s" : "",
                  m.batch_per_gpu ? std::to_string(m.batch_per_gpu) : "not stated", m.date);
  auto it = std::find(sources->begin(), sources->end(), text);
  if (it == sources->end()) it = sources->insert(sources->end(), text);
  return static_cast<int>(it - sources->begin()) + 1;
}

// The basis column: sourced[note], your run, or the estimate's tag.
std::string basis_text(const AdviseRow& row) {
  if (row.measured) return fmt::format("sourced[{}]", row.source_note);
  if (row.reanchored) return "your run";
  return basis_tag(row.basis);
}

// Which priced row meets the deadline at the lowest total cost.
std::string pick_deadline(const AdviseInput& in, const AdviseReport& r) {
  if (in.deadline_hours <= 0) return "";
  const AdviseRow* best = nullptr;
  for (const AdviseRow& row : r.rows) {
    if (!row.cost_total || !row.fits) continue;
    if (row.epoch_seconds * in.epochs / 3600 > in.deadline_hours) continue;
    if (!best || *row.cost_total < *best->cost_total) best = &row;
  }
  if (!best) {
    return fmt::format("deadline {} h for {} epochs: no priced configuration that fits meets it",
                       in.deadline_hours, in.epochs);
  }
  return fmt::format(
      "deadline {} h for {} epochs: cheapest is {} x {}: {:.1f} h, {:.2f} in total ({}-bound; GPU "
      "figure {})",
      in.deadline_hours, in.epochs, best->count, best->gpu, best->epoch_seconds * in.epochs / 3600,
      *best->cost_total, best->bound_by, basis_text(*best));
}

}  // namespace

Result<AdviseReport> advise(const AdviseInput& in) {
  SLUICE_RETURN_IF_ERROR(check_input(in));
  SLUICE_RETURN_IF_ERROR(model_forward_gflops(in.model).status());
  SLUICE_ASSIGN_OR_RETURN(MemoryModel mem, memory_model(in.model, in.task, in.amp));
  AdviseReport r;
  r.epochs = in.epochs;
  r.derivation = derivation(in, mem);
  for (const GpuType& g : in.catalog) {
    if (!in.only.empty() && std::find(in.only.begin(), in.only.end(), g.name) == in.only.end())
      continue;
    for (int n : in.counts) {
      SLUICE_ASSIGN_OR_RETURN(Figure f, row_figure(in, g, n));
      AdviseRow row;
      row.gpu = g.name;
      row.count = n;
      row.precision = in.amp == "bf16" && g.bf16_tflops <= 0 ? "fp16" : in.amp;
      row.gpu_images_per_second = f.images_per_second;
      row.measured = f.measured;
      row.reanchored = in.anchor.has_value();
      row.basis = f.basis;
      row.how = f.how;
      if (f.source) row.source_note = note_for(*f.source, &r.sources);
      if (!f.measured && !row.reanchored && n == 1) {  // the rows listed below the table
        for (const Measurement* m : f.used) row.used_notes.push_back(note_for(*m, &r.sources));
      }
      finish_row(in, g, mem, &row);
      r.rows.push_back(std::move(row));
    }
  }
  r.deadline = pick_deadline(in, r);
  return r;
}

std::string format_advise_text(const AdviseReport& r) {
  std::string out =
      fmt::format("{:<10} {:>3} {:>5} {:>10} {:<11} {:>4} {:>5} {:>7} {:>6} {:>9} {:>10} {:>11}\n",
                  "gpu", "n", "prec", "GPU img/s", "basis", "fits", "max b", "cores", "bound",
                  "epoch", "cost/epoch", fmt::format("cost/{}ep", r.epochs));
  for (const AdviseRow& row : r.rows) {
    const std::string basis = basis_text(row);
    auto money = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.2f}", *v) : std::string("-");
    };
    out += fmt::format(
        "{:<10} {:>3} {:>5} {:>10.0f} {:<11} {:>4} {:>5} {:>7.1f} {:>6} {:>9} {:>10} {:>11}\n",
        row.gpu, row.count, row.precision, row.gpu_images_per_second, basis,
        row.fits ? "yes" : "NO", row.max_batch, row.cores_needed,
        row.input_bound ? "INPUT" : row.bound_by, duration(row.epoch_seconds),
        money(row.cost_per_epoch), money(row.cost_total));
  }
  std::string estimates;
  for (const AdviseRow& row : r.rows) {
    if (!row.measured && (row.count == 1 || row.reanchored)) {
      std::string notes;
      for (int n : row.used_notes) notes += fmt::format("[{}]", n);
      estimates += fmt::format("  {} x {}: {}{}\n", row.count, row.gpu, row.how,
                               notes.empty() ? "" : "; sources " + notes);
    }
  }
  if (!estimates.empty()) out += "\nNot measured by a source:\n" + estimates;
  if (!r.deadline.empty()) out += "\n" + r.deadline + "\n";
  if (!r.sources.empty()) out += "\nSources:\n";
  for (size_t i = 0; i < r.sources.size(); ++i) {
    out += fmt::format("  [{}] {}\n", i + 1, r.sources[i]);
  }
  out += "\nHow each column is derived:\n";
  for (const std::string& d : r.derivation) out += "  - " + d + "\n";
  return out;
}

}  // namespace sluice
