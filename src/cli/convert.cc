// sluice convert SRC -o OUT: image folder (or list file) -> TFRecord shards.
#include <fmt/format.h>

#include <fstream>

#include "cli/common.h"
#include "sluice/dataset.h"

namespace sluice::cli {
namespace {

struct ConvertCli {
  std::string src, out;
  std::string compression = "none";
  std::string on_error = "fail";
  std::string check = "decode";
  std::string classes_file;
  double shard_size_mb = 128;
  bool no_shuffle = false;
  bool quiet = false;
  ConvertOptions options;
};

Result<std::vector<std::string>> read_classes(const std::string& path) {
  std::ifstream f(path);
  if (!f) return not_found_error(path + ": cannot open class list");
  std::vector<std::string> names;
  for (std::string line; std::getline(f, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (names.empty()) return invalid_argument_error(path + ": class list is empty");
  return names;
}

std::string mb(uint64_t b) {
  return fmt::format("{:.1f} MB", b / 1e6);
}

int run(ConvertCli& c) {
  ConvertOptions& o = c.options;
  auto compression = parse_compression(c.compression);
  auto policy = parse_error_policy(c.on_error);
  if (!compression.ok()) return report_error("convert", compression.status());
  if (!policy.ok()) return report_error("convert", policy.status());
  if (c.check != "decode" && c.check != "header") {
    return report_error("convert", invalid_argument_error("--check must be decode or header"));
  }
  if (c.shard_size_mb <= 0)
    return report_error("convert", invalid_argument_error("--shard-size must be above 0"));
  o.compression = *compression;
  o.on_error = *policy;
  o.check_decode = c.check == "decode";
  o.shuffle = !c.no_shuffle;
  o.shard_bytes = static_cast<uint64_t>(c.shard_size_mb * 1024 * 1024);
  o.command = joined_command_line();
  if (!c.classes_file.empty()) {
    auto classes = read_classes(c.classes_file);
    if (!classes.ok()) return report_error("convert", classes.status());
    o.classes = *classes;
  }
  Progress progress("convert", "images", c.quiet);
  o.progress = [&](const ConvertProgress& p) {
    progress.update(p.done, p.total, p.seconds, p.done == p.total);
  };
  o.warn = [](const std::string& file, const std::string& reason) {
    std::fprintf(stderr, "sluice convert: warning: skipping %s: %s\n", file.c_str(),
                 reason.c_str());
  };
  auto report = convert_images(c.src, c.out, o);
  if (!report.ok()) return report_error("convert", report.status());
  const ConvertReport& r = *report;
  std::printf("converted %llu of %llu images into %zu shard%s (%s) in %.1f s: %.0f images/s\n",
              static_cast<unsigned long long>(r.written), static_cast<unsigned long long>(r.images),
              r.shards.size(), r.shards.size() == 1 ? "" : "s", mb(r.bytes_out).c_str(), r.seconds,
              r.seconds > 0 ? r.images / r.seconds : 0.0);
  for (const ShardInfo& s : r.shards) {
    std::printf("  %s/%s  %llu records  %s\n", c.out.c_str(), s.file.c_str(),
                static_cast<unsigned long long>(s.records), mb(s.bytes).c_str());
  }
  if (r.resized)
    std::printf("  re-encoded %llu images to a longest side of %d px\n",
                static_cast<unsigned long long>(r.resized), o.max_side);
  if (r.rewritten) {
    std::printf("  rewrote %llu progressive JPEGs as sequential (lossless)\n",
                static_cast<unsigned long long>(r.rewritten));
  }
  if (!r.skipped.empty()) {
    std::printf("  skipped %zu bad file%s:\n", r.skipped.size(), r.skipped.size() == 1 ? "" : "s");
    for (const auto& [file, reason] : r.skipped)
      std::printf("    %s: %s\n", file.c_str(), reason.c_str());
  }
  if (!r.ignored.empty()) {
    std::printf("  ignored %zu file%s that are not .jpg/.jpeg/.png in a class folder (first: %s)\n",
                r.ignored.size(), r.ignored.size() == 1 ? "" : "s", r.ignored.front().c_str());
  }
  std::printf("  %zu classes; manifest %s/%s\n", r.classes.size(), c.out.c_str(), kManifestName);
  return kExitOk;
}

}  // namespace

void register_convert(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<ConvertCli>();
  ConvertOptions& o = c->options;
  CLI::App* sub =
      app.add_subcommand("convert", "Convert an image folder or list file into TFRecord shards");
  sub->add_option("src", c->src,
                  "ImageFolder tree (SRC/CLASS/*.jpg|jpeg|png) or a CSV/TSV list of path,label")
      ->required();
  sub->add_option("-o,--out", c->out, "Output dataset folder")->required();
  sub->add_option("--split", o.split, "Split name: shard prefix and dataset.json entry")
      ->capture_default_str();
  auto* shards =
      sub->add_option("--shards", o.shards, "Number of shards (instead of --shard-size)");
  sub->add_option("--shard-size", c->shard_size_mb, "Target shard size in MiB")
      ->capture_default_str()
      ->excludes(shards);
  sub->add_option("--compression", c->compression,
                  "none | gzip | zlib (whole-file, as TensorFlow writes)")
      ->capture_default_str();
  sub->add_option("--workers", o.workers,
                  "Worker threads (0 = one per core); output bytes do not depend on it")
      ->capture_default_str();
  sub->add_option("--max-side", o.max_side,
                  "Re-encode images whose longest side exceeds PX (0 = keep all as they are)")
      ->capture_default_str();
  sub->add_option("--quality", o.quality, "JPEG quality for re-encoded images")
      ->capture_default_str();
  sub->add_flag(
      "--rewrite-progressive", o.rewrite_progressive,
      "Rewrite progressive JPEGs losslessly as sequential (same pixels, cheaper decodes)");
  sub->add_option("--on-error", c->on_error,
                  "Bad image: fail (stop) | skip (list in summary) | warn (and print now)")
      ->capture_default_str();
  sub->add_option("--check", c->check,
                  "decode: decode every image to prove it whole | header: read headers only")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of the one-time shuffle")->capture_default_str();
  sub->add_flag("--no-shuffle", c->no_shuffle, "Keep input order (class by class)");
  sub->add_option("--classes", c->classes_file,
                  "File with one class name per line: label ids follow its order");
  sub->add_option("--max-pixels", o.max_pixels,
                  "Refuse images declaring more pixels (decompression bombs)")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", c->quiet, "No progress display");
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
