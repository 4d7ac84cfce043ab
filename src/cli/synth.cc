// sluice synth OUT: a learnable synthetic ImageFolder dataset, made by the
// project's own renderer (no files from outside): OUT/train/CLASS/*.jpg and
// OUT/val/CLASS/*.jpg, a share of them PNG.
#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/common.h"
#include "sluice/image.h"

namespace sluice::cli {
namespace {

namespace fs = std::filesystem;

// The renderer's shapes, in label order (label % 12), for folder names.
constexpr const char* kShapeNames[] = {"disc",    "square",   "triangle", "ring",
                                       "cross",   "hstripes", "vstripes", "checks",
                                       "diamond", "dots",     "star",     "frame"};

struct SynthOptions {
  std::string out;
  int classes = 10;
  int per_class = 100;
  int val_per_class = -1;  // -1 = per_class / 5
  int size = 64;
  bool fixed_size = false;
  double png_fraction = 0.1;
  int quality = 90;
  uint64_t seed = 0;
  int workers = 0;
};

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Job {
  std::string path;
  int label;
  uint64_t index;
  int width, height;
  bool png;
};

std::vector<Job> plan(const SynthOptions& o) {
  std::vector<Job> jobs;
  int val = o.val_per_class >= 0 ? o.val_per_class : o.per_class / 5;
  uint64_t index = 0;
  for (const char* split : {"train", "val"}) {
    int count = std::string(split) == "train" ? o.per_class : val;
    for (int c = 0; c < o.classes; ++c) {
      std::string dir = fmt::format("{}/{}/c{:02d}_{}", o.out, split, c, kShapeNames[c % 12]);
      for (int i = 0; i < count; ++i, ++index) {
        uint64_t h = mix(o.seed * 0x9e3779b97f4a7c15ull + index);
        int w = o.size, hgt = o.size;
        if (!o.fixed_size) {  // 1x-1.5x the base size, aspect 3:4 to 4:3
          w = o.size + static_cast<int>(h % (o.size / 2 + 1));
          hgt = std::clamp(static_cast<int>(w * (0.75 + ((h >> 20) % 59) / 100.0)), o.size,
                           o.size * 2);
        }
        bool png = ((h >> 40) % 1000) < static_cast<uint64_t>(o.png_fraction * 1000);
        jobs.push_back(
            {fmt::format("{}/{:06d}.{}", dir, index, png ? "png" : "jpg"), c, index, w, hgt, png});
      }
    }
  }
  return jobs;
}

Status render(const Job& j, const SynthOptions& o) {
  Image img = render_synthetic_image(j.label, o.classes, o.seed, j.index, j.width, j.height);
  Result<std::string> bytes = j.png ? encode_png(img) : encode_jpeg(img, o.quality);
  if (!bytes.ok()) return bytes.status().with_prefix(j.path);
  std::ofstream f(j.path, std::ios::binary | std::ios::trunc);
  f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (!f) return internal_error(j.path + ": cannot write");
  return Status();
}

int run(const SynthOptions& o) {
  if (o.classes < 2 || o.per_class < 1 || o.size < 8 || o.quality < 1 || o.quality > 100 ||
      o.png_fraction < 0 || o.png_fraction > 1) {
    return report_error("synth",
                        invalid_argument_error("need --classes >= 2, --per-class >= 1, --size >= "
                                               "8, --quality 1..100, --png-fraction 0..1"));
  }
  std::vector<Job> jobs = plan(o);
  std::error_code ec;
  for (const Job& j : jobs) {
    fs::create_directories(fs::path(j.path).parent_path(), ec);
    if (ec) return report_error("synth", errno_error(j.path, "cannot create folder", ec.value()));
  }
  size_t workers = o.workers > 0 ? static_cast<size_t>(o.workers)
                                 : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::vector<Status> errors(workers);
  {
    std::vector<std::jthread> pool;
    for (size_t w = 0; w < workers; ++w) {
      pool.emplace_back([&, w] {
        for (size_t k; (k = next.fetch_add(1)) < jobs.size();) {
          Status s = render(jobs[k], o);
          if (!s.ok() && errors[w].ok()) errors[w] = s;
        }
      });
    }
  }
  for (const Status& s : errors) {
    if (!s.ok()) return report_error("synth", s);
  }
  std::printf("synth: wrote %zu images (%d classes) to %s/train and %s/val\n", jobs.size(),
              o.classes, o.out.c_str(), o.out.c_str());
  return kExitOk;
}

}  // namespace

void register_synth(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SynthOptions>();
  CLI::App* sub = app.add_subcommand(
      "synth", "Render a learnable synthetic image dataset (ImageFolder layout)");
  sub->add_option("out", o->out, "Output folder (train/ and val/ are made inside)")->required();
  sub->add_option("--classes", o->classes, "Number of classes (shapes)")->capture_default_str();
  sub->add_option("--per-class", o->per_class, "Training images per class")->capture_default_str();
  sub->add_option("--val-per-class", o->val_per_class,
                  "Validation images per class (default per-class/5)");
  sub->add_option("--size", o->size, "Base image side in pixels (images are 1x-1.5x this)")
      ->capture_default_str();
  sub->add_flag("--fixed-size", o->fixed_size, "Every image exactly --size square");
  sub->add_option("--png-fraction", o->png_fraction, "Share of images written as PNG")
      ->capture_default_str();
  sub->add_option("--quality", o->quality, "JPEG quality")->capture_default_str();
  sub->add_option("--seed", o->seed, "Seed: same seed, same bytes")->capture_default_str();
  sub->add_option("--workers", o->workers, "Threads (0 = one per core)")->capture_default_str();
  sub->callback([o, exit_code] { *exit_code = run(*o); });
}

}  // namespace sluice::cli
