// sluice convert SRC -o OUT: image folder (or list file) -> TFRecord shards.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "cli/common.h"
#include "dataset/part_record.h"
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
  std::string part;  // "I/N", "I" (with --parts), "auto"; empty: the whole source
  int parts = 0;
  std::string finish;  // --finish DIR
  bool no_verify = false;
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

// A whole non-negative decimal number, or nullopt.
std::optional<int> whole_number(std::string_view text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || v < 0)
    return std::nullopt;
  return v;
}

// An environment variable as a number: nullopt when unset, an error naming
// it when set to something else.
Result<std::optional<int>> env_number(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::optional<int>();
  auto v = whole_number(value);
  if (!v) return invalid_argument_error(fmt::format("{}='{}' is not a whole number", name, value));
  return v;
}

// A Slurm job array's task: (ID - MIN) / STEP of COUNT (--parts wins), so
// --array=1-8 and --array=0-14:2 work too; a list (--array=1,4) does not.
Result<std::string> part_from_slurm(int id, int parts, ConvertOptions* o) {
  SLUICE_ASSIGN_OR_RETURN(auto min, env_number("SLURM_ARRAY_TASK_MIN"));
  SLUICE_ASSIGN_OR_RETURN(auto step, env_number("SLURM_ARRAY_TASK_STEP"));
  SLUICE_ASSIGN_OR_RETURN(auto count, env_number("SLURM_ARRAY_TASK_COUNT"));
  std::string from = fmt::format("SLURM_ARRAY_TASK_ID={}", id);
  if (min) from += fmt::format(", SLURM_ARRAY_TASK_MIN={}", *min);
  if (step && *step > 1) from += fmt::format(", SLURM_ARRAY_TASK_STEP={}", *step);
  if (parts == 0 && !count) {
    return invalid_argument_error(from + " but SLURM_ARRAY_TASK_COUNT is not set: add --parts N");
  }
  if (parts == 0) from += fmt::format(", SLURM_ARRAY_TASK_COUNT={}", *count);
  o->parts = parts > 0 ? parts : *count;
  const int offset = id - min.value_or(0), stride = std::max(1, step.value_or(1));
  o->part = offset / stride;
  if (offset < 0 || offset % stride != 0 || o->part >= o->parts) {
    return invalid_argument_error(from + fmt::format(": not a task of a range of {} tasks "
                                                     "(use --array=0-{})",
                                                     o->parts, o->parts - 1));
  }
  return from;
}

// --part auto (or --parts N alone): the index a job runner gives the task.
// Returns the variables read, for the user to see.
Result<std::string> part_from_environment(int parts, ConvertOptions* o) {
  SLUICE_ASSIGN_OR_RETURN(auto slurm, env_number("SLURM_ARRAY_TASK_ID"));
  if (slurm) return part_from_slurm(*slurm, parts, o);
  SLUICE_ASSIGN_OR_RETURN(auto k8s, env_number("JOB_COMPLETION_INDEX"));
  if (!k8s) {
    return invalid_argument_error(
        "--part auto: neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set: give --part "
        "I/N");
  }
  if (parts == 0) {
    return invalid_argument_error(fmt::format(
        "JOB_COMPLETION_INDEX={} gives the part but not the count: add --parts N (the Job's "
        "completions)",
        *k8s));
  }
  o->part = *k8s;
  o->parts = parts;
  return fmt::format("JOB_COMPLETION_INDEX={}", *k8s);
}

// Sets options.part/parts from --part and --parts (or the environment).
// Returns where they came from, in words; empty for a whole conversion.
Result<std::string> resolve_part(const ConvertCli& c, ConvertOptions* o) {
  if (c.part.empty() && c.parts == 0) return std::string();
  if (c.part.empty() || c.part == "auto") return part_from_environment(c.parts, o);
  const size_t slash = c.part.find('/');
  auto part = whole_number(std::string_view(c.part).substr(0, slash));
  auto parts = slash == std::string::npos
                   ? std::optional<int>(c.parts)
                   : whole_number(std::string_view(c.part).substr(slash + 1));
  if (!part || !parts || *parts == 0) {
    return invalid_argument_error(fmt::format(
        "--part '{}': expected I/N (part I of N, from 0), I with --parts N, or auto", c.part));
  }
  if (c.parts > 0 && *parts != c.parts) {
    return invalid_argument_error(
        fmt::format("--part {} and --parts {} disagree on the part count", c.part, c.parts));
  }
  o->part = *part;
  o->parts = *parts;
  return fmt::format("--part {}/{}", *part, *parts);
}

std::string mb(uint64_t b) {
  return fmt::format("{:.1f} MB", b / 1e6);
}

// Options from the flags; an error names the flag.
Status apply_flags(ConvertCli& c) {
  ConvertOptions& o = c.options;
  SLUICE_ASSIGN_OR_RETURN(o.compression, parse_compression(c.compression));
  SLUICE_ASSIGN_OR_RETURN(o.on_error, parse_error_policy(c.on_error));
  if (c.check != "decode" && c.check != "header")
    return invalid_argument_error("--check must be decode or header");
  if (c.shard_size_mb <= 0) return invalid_argument_error("--shard-size must be above 0");
  o.check_decode = c.check == "decode";
  o.shuffle = !c.no_shuffle;
  o.shard_bytes = static_cast<uint64_t>(c.shard_size_mb * 1024 * 1024);
  o.command = joined_command_line();
  if (!c.classes_file.empty()) {
    SLUICE_ASSIGN_OR_RETURN(o.classes, read_classes(c.classes_file));
  }
  return Status();
}

void print_shards(const std::string& out, const std::vector<ShardInfo>& shards) {
  for (const ShardInfo& s : shards) {
    std::printf("  %s/%s  %llu records  %s\n", out.c_str(), s.file.c_str(),
                static_cast<unsigned long long>(s.records), mb(s.bytes).c_str());
  }
}

void print_skipped(const ConvertReport& r) {
  if (r.skipped.empty()) return;
  std::printf("  skipped %zu bad file%s:\n", r.skipped.size(), r.skipped.size() == 1 ? "" : "s");
  for (const auto& [file, reason] : r.skipped)
    std::printf("    %s: %s\n", file.c_str(), reason.c_str());
}

void print_headline(const ConvertCli& c, const ConvertReport& r) {
  const ConvertOptions& o = c.options;
  const auto written = static_cast<unsigned long long>(r.written);
  if (o.parts == 0) {
    std::printf("converted %llu of %llu images into %zu shard%s (%s) in %.1f s: %.0f images/s\n",
                written, static_cast<unsigned long long>(r.images), r.shards.size(),
                r.shards.size() == 1 ? "" : "s", mb(r.bytes_out).c_str(), r.seconds,
                r.seconds > 0 ? r.images / r.seconds : 0.0);
    return;
  }
  const auto count = static_cast<unsigned long long>(r.shard_count);
  if (r.shards.empty()) {
    std::printf(
        "converted part %d of %d: no shard of the %llu falls to it (more parts than "
        "shards)\n",
        o.part, o.parts, count);
    return;
  }
  const auto first = static_cast<unsigned long long>(r.first_shard);
  const auto last = first + r.shards.size() - 1;
  const std::string range = r.shards.size() == 1 ? fmt::format("shard {}", first)
                                                 : fmt::format("shards {}-{}", first, last);
  const double handled = static_cast<double>(r.written + r.skipped.size());
  std::printf(
      "converted part %d of %d: %llu records into %s of %llu (%s) in %.1f s: %.0f "
      "images/s\n",
      o.part, o.parts, written, range.c_str(), count, mb(r.bytes_out).c_str(), r.seconds,
      r.seconds > 0 ? handled / r.seconds : 0.0);
}

void print_report(const ConvertCli& c, const ConvertReport& r) {
  const ConvertOptions& o = c.options;
  print_headline(c, r);
  print_shards(c.out, r.shards);
  if (r.resized)
    std::printf("  re-encoded %llu images to a longest side of %d px\n",
                static_cast<unsigned long long>(r.resized), o.max_side);
  if (r.rewritten) {
    std::printf("  rewrote %llu progressive JPEGs as sequential (lossless)\n",
                static_cast<unsigned long long>(r.rewritten));
  }
  print_skipped(r);
  if (!r.ignored.empty()) {
    std::printf("  ignored %zu file%s that are not .jpg/.jpeg/.png in a class folder (first: %s)\n",
                r.ignored.size(), r.ignored.size() == 1 ? "" : "s", r.ignored.front().c_str());
  }
  if (o.parts == 0) {
    std::printf("  %zu classes; manifest %s/%s\n", r.classes.size(), c.out.c_str(), kManifestName);
    return;
  }
  const std::string record =
      c.out + "/" + detail::kPartsFolder + "/" + detail::part_record_name(o.split, o.part, o.parts);
  std::printf("  part record %s; when all %d parts are done: sluice convert --finish %s%s\n",
              record.c_str(), o.parts, c.out.c_str(),
              o.split == "train" ? "" : (" --split " + o.split).c_str());
}

int run_convert(ConvertCli& c) {
  if (c.src.empty() || c.out.empty()) {
    std::fprintf(stderr, "sluice convert: SRC and -o OUT are required (or --finish OUT)\n");
    return kExitUsage;
  }
  if (c.no_verify) {
    return report_error("convert", invalid_argument_error("--no-verify goes with --finish"));
  }
  if (Status st = apply_flags(c); !st.ok()) return report_error("convert", st);
  ConvertOptions& o = c.options;
  auto from = resolve_part(c, &o);
  if (!from.ok()) return report_error("convert", from.status());
  if (!from->empty()) {
    std::printf("sluice convert: part %d of %d (%s)\n", o.part, o.parts, from->c_str());
    std::fflush(stdout);
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
  print_report(c, *report);
  return kExitOk;
}

int run_finish(const ConvertCli& c) {
  if (!c.src.empty() || !c.out.empty() || !c.part.empty() || c.parts > 0) {
    std::fprintf(stderr,
                 "sluice convert: --finish OUT takes the dataset folder alone (and --split, "
                 "--no-verify)\n");
    return kExitUsage;
  }
  FinishOptions fo;
  fo.split = c.options.split;
  fo.verify = !c.no_verify;
  auto report = finish_convert(c.finish, fo);
  if (!report.ok()) return report_error("convert", report.status());
  const ConvertReport& r = *report;
  std::printf("finished split '%s': %llu of %llu images in %zu shard%s (%s), %s in %.1f s\n",
              fo.split.c_str(), static_cast<unsigned long long>(r.written),
              static_cast<unsigned long long>(r.images), r.shards.size(),
              r.shards.size() == 1 ? "" : "s", mb(r.bytes_out).c_str(),
              fo.verify ? "sizes and CRC32C checked" : "sizes checked", r.seconds);
  print_skipped(r);
  std::printf("  %zu classes; manifest %s/%s\n", r.classes.size(), c.finish.c_str(), kManifestName);
  return kExitOk;
}

int run(ConvertCli& c) {
  return c.finish.empty() ? run_convert(c) : run_finish(c);
}

// --part, --parts, --finish, --no-verify: a conversion spread over machines.
void add_part_options(CLI::App* sub, ConvertCli* c) {
  sub->add_option("--part", c->part,
                  "Convert only part I of N (I/N, I from 0; or I with --parts N) of the shuffled "
                  "listing, as one task of many sharing OUT; `auto`: I (and N) from "
                  "SLURM_ARRAY_TASK_ID/_COUNT (Slurm job array) or JOB_COMPLETION_INDEX "
                  "(Kubernetes indexed Job, with --parts). Shards are then planned by count "
                  "(--shards, else source bytes / --shard-size); then run --finish")
      ->type_name("I/N|auto");
  sub->add_option("--parts", c->parts,
                  "Part count N for --part I or auto (alone: --part auto --parts N)")
      ->type_name("N");
  sub->add_option("--finish", c->finish,
                  "Check every part of a --part conversion in this dataset folder and write "
                  "dataset.json (with --split)")
      ->type_name("OUT");
  sub->add_flag("--no-verify", c->no_verify,
                "With --finish: compare shard sizes only, not their CRC32C");
}

}  // namespace

void register_convert(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<ConvertCli>();
  ConvertOptions& o = c->options;
  CLI::App* sub =
      app.add_subcommand("convert",
                         "Convert an image folder or list file into TFRecord shards (or part I "
                         "of N of them: --part; then --finish OUT)");
  sub->add_option("src", c->src,
                  "ImageFolder tree (SRC/CLASS/*.jpg|jpeg|png) or a CSV/TSV list of path,label");
  sub->add_option("-o,--out", c->out, "Output dataset folder");
  sub->add_option("--split", o.split, "Split name: shard prefix and dataset.json entry")
      ->capture_default_str();
  auto* shards = sub->add_option("--shards", o.shards,
                                 "Number of shards (instead of --shard-size; with --part it also "
                                 "spares every part a stat of every source file)");
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
  add_part_options(sub, c.get());
  sub->add_flag("-q,--quiet", c->quiet, "No progress display");
  sub->callback([c, exit_code] { *exit_code = run(*c); });
}

}  // namespace sluice::cli
