// extract(): a trained model's features for every sample of a dataset, in
// storage order, as .npy files that join back to the records.
#include <fmt/format.h>
#include <torch/nn.h>
#include <torch/utils.h>

#include <chrono>
#include <filesystem>

#include "sluice/train.h"
#include "train/checkpoint.h"
#include "train/models.h"
#include "train/npy.h"
#include "train/support.h"

namespace sluice {
namespace {

// FEATURES.npy -> FEATURES.labels.npy, FEATURES.keys.npy
std::string sibling(const std::string& out, const std::string& what) {
  std::filesystem::path p(out);
  std::string stem = p.extension() == ".npy" ? p.stem().string() : p.filename().string();
  return (p.parent_path() / (stem + "." + what + ".npy")).string();
}

// The pipeline over the data as the checkpoint's model saw its input: eval
// augmentation, storage order, every sample, its size and normalisation
// unless given.
Result<std::unique_ptr<Pipeline>> open_data(const ExtractOptions& o,
                                            const training::CheckpointMeta& meta,
                                            const torch::Device& device) {
  PipelineOptions p = o.pipeline;
  p.augment = AugmentMode::kEval;
  p.order = Order::kNone;
  p.drop_last = false;
  p.rank = 0;
  p.world_size = 1;
  p.device = device.is_cuda() ? device.index() : -1;
  if (meta.image_size) {
    p.sample.width = (*meta.image_size)[0];
    p.sample.height = (*meta.image_size)[1];
  }
  for (int c = 0; c < 3 && meta.mean && meta.std; ++c) {
    p.sample.mean[c] = (*meta.mean)[c];
    p.sample.std[c] = (*meta.std)[c];
  }
  return Pipeline::create(p);
}

// The checkpoint's model, in eval mode, with --layer checked against it.
Result<std::shared_ptr<training::ClassifierImpl>> open_model(const ExtractOptions& o,
                                                             const training::CheckpointMeta& meta,
                                                             int image_size,
                                                             const torch::Device& device) {
  SLUICE_ASSIGN_OR_RETURN(
      auto model,
      training::make_model(meta.model, static_cast<int>(meta.classes.size()), image_size));
  SLUICE_RETURN_IF_ERROR(
      training::read_checkpoint(o.weights, *model, nullptr, nullptr, /*rng=*/false, device));
  model->eval();
  std::vector<std::string> names = model->layer_names();
  if (!o.layer.empty() && std::find(names.begin(), names.end(), o.layer) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return invalid_argument_error(
        fmt::format("--layer: {} has no layer '{}' (it has: {})", meta.model, o.layer, list));
  }
  return model;
}

// The four .npy files, written as batches arrive (features and labels) or
// at the end (keys and ids: their width is known only then).
class FeatureFiles {
 public:
  explicit FeatureFiles(const ExtractOptions& o) : o_(o) {}

  Status add(const torch::Tensor& f, const Batch& batch, const Pipeline& pipe, ExtractSummary* s) {
    if (!features_) {
      s->dim = f.size(1);
      SLUICE_ASSIGN_OR_RETURN(
          auto w, training::NpyWriter::create(o_.out, o_.float16 ? "<f2" : "<f4", s->dim,
                                              o_.float16 ? 2 : 4));
      features_.emplace(std::move(w));
      SLUICE_ASSIGN_OR_RETURN(auto l, training::NpyWriter::create(s->labels_path, "<i8", 0, 8));
      labels_.emplace(std::move(l));
    }
    SLUICE_RETURN_IF_ERROR(features_->append(f.data_ptr(), f.size(0)));
    SLUICE_RETURN_IF_ERROR(labels_->append(batch.labels(), static_cast<int64_t>(batch.size())));
    for (size_t i = 0; i < batch.size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(std::string key, pipe.record_key(batch.sample_ids()[i]));
      keys_.push_back(std::move(key));
      ids_.push_back(static_cast<int64_t>(batch.sample_ids()[i]));
    }
    s->rows += batch.size();
    return Status();
  }

  Status finish(const ExtractSummary& s) {
    if (!features_) return invalid_argument_error("the data has no samples to extract");
    SLUICE_RETURN_IF_ERROR(features_->finish());
    SLUICE_RETURN_IF_ERROR(labels_->finish());
    SLUICE_RETURN_IF_ERROR(training::write_npy_strings(s.keys_path, keys_));
    SLUICE_ASSIGN_OR_RETURN(auto w, training::NpyWriter::create(s.ids_path, "<i8", 0, 8));
    SLUICE_RETURN_IF_ERROR(w.append(ids_.data(), static_cast<int64_t>(ids_.size())));
    return w.finish();
  }

 private:
  const ExtractOptions& o_;
  std::optional<training::NpyWriter> features_, labels_;
  std::vector<std::string> keys_;
  std::vector<int64_t> ids_;  // global record ids: the join that always works
};

Result<ExtractSummary> run_extract(const ExtractOptions& o) {
  if (o.weights.empty()) return invalid_argument_error("--weights is required");
  if (o.out.empty()) return invalid_argument_error("--out is required");
  SLUICE_ASSIGN_OR_RETURN(torch::Device device, training::parse_device(o.device, 0));
  SLUICE_ASSIGN_OR_RETURN(auto autocast, training::autocast_mode(o.amp, device));
  if (o.threads > 0) torch::set_num_threads(o.threads);
  SLUICE_ASSIGN_OR_RETURN(training::CheckpointMeta meta, training::read_checkpoint_meta(o.weights));
  SLUICE_ASSIGN_OR_RETURN(auto pipe, open_data(o, meta, device));
  const SampleSpec& spec = pipe->options().sample;
  SLUICE_ASSIGN_OR_RETURN(auto model, open_model(o, meta, spec.width, device));
  if (pipe->classes() != meta.classes && !pipe->classes().empty()) {
    std::fprintf(stderr,
                 "extract: note: this data's classes differ from the checkpoint's; labels are "
                 "the data's\n");
  }
  if (auto parent = std::filesystem::path(o.out).parent_path(); !parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) return errno_error(parent.string(), "cannot create", ec.value());
  }
  ExtractSummary s;
  s.layer = o.layer.empty() ? "penultimate" : o.layer;
  s.features_path = o.out;
  s.labels_path = sibling(o.out, "labels");
  s.keys_path = sibling(o.out, "keys");
  s.ids_path = sibling(o.out, "ids");
  FeatureFiles files(o);
  torch::NoGradGuard no_grad;
  auto t0 = std::chrono::steady_clock::now();
  SLUICE_RETURN_IF_ERROR(pipe->set_epoch(0));
  for (;;) {
    auto batch = pipe->next();
    if (batch.status().code() == StatusCode::kOutOfRange) break;
    if (!batch.ok()) return batch.status();
    torch::Tensor x = training::batch_images(*batch, spec, device);
    torch::Tensor f;
    {
      training::AutocastScope scope(autocast);
      f = model->features(x, o.layer);
    }
    f = f.to(torch::kCPU, o.float16 ? torch::kHalf : torch::kFloat).contiguous();
    SLUICE_RETURN_IF_ERROR(files.add(f, *batch, *pipe, &s));
    if (!o.quiet && batch->index() % 20 == 19) {
      std::fprintf(stderr, "  extract: %llu of %llu\n", static_cast<unsigned long long>(s.rows),
                   static_cast<unsigned long long>(pipe->samples_per_epoch()));
    }
  }
  SLUICE_RETURN_IF_ERROR(files.finish(s));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.images_per_second = s.rows / std::max(1e-9, secs);
  return s;
}

}  // namespace

Result<ExtractSummary> extract(const ExtractOptions& options) {
  return training::guarded([&] { return run_extract(options); });
}

}  // namespace sluice
