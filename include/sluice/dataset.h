// Datasets of image records: the dataset.json manifest, feature keys,
// conversion of an image folder into TFRecord shards, and inspection.
//
// A dataset folder holds, per split, `{split}-{i:05d}-of-{n:05d}.tfrecord`
// shards with a DALI-format `.idx` beside each, and one `dataset.json`
// describing every split (schema, classes, per-shard counts and CRC32C
// checksums, the command that made it). docs/formats.md specifies it.
//
// Thread safety: the functions here are reentrant; convert_images runs its
// own worker threads and calls the progress callback from the calling
// thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sluice/example.h"
#include "sluice/image.h"
#include "sluice/record.h"
#include "sluice/status.h"

namespace sluice {

// Which features of an Example hold the image and its metadata.
struct FeatureKeys {
  std::string image = "image/encoded";      // bytes: the encoded image
  std::string format = "image/format";      // bytes: "jpeg" | "png" (optional)
  std::string label = "image/class/label";  // int64 (or bytes: a class name)
  std::string height = "image/height";      // int64 (optional)
  std::string width = "image/width";        // int64 (optional)
  std::string key = "image/filename";       // bytes: joins rows back to files (optional)
  friend bool operator==(const FeatureKeys&, const FeatureKeys&) = default;
};

// TensorFlow's image conventions (the default, and what convert writes).
FeatureKeys tensorflow_feature_keys();
// The tutorial layout `image_raw`, `label`, `height`, `width`.
FeatureKeys image_raw_feature_keys();
// Picks the conventions an Example follows: TensorFlow's when it has
// image/encoded, the tutorial's when it has image_raw; kNotFound otherwise.
Result<FeatureKeys> detect_feature_keys(const Example& example);

struct ShardInfo {
  std::string file;   // name relative to the dataset folder
  std::string index;  // its .idx, relative too
  uint64_t records = 0;
  uint64_t bytes = 0;   // file size
  uint32_t crc32c = 0;  // of the whole file's bytes
};

struct SplitInfo {
  Compression compression = Compression::kNone;
  uint64_t records = 0;
  std::vector<ShardInfo> shards;
  // Files convert left out (under --on-error skip|warn), with the reason.
  std::vector<std::pair<std::string, std::string>> skipped;
  std::string command;     // the command line that made this split
  std::string source;      // absolute path of the image folder or list it came from
  std::string created_by;  // "sluice 0.1.0"
};

struct DatasetManifest {
  static constexpr int kVersion = 1;
  FeatureKeys keys;
  std::vector<std::string> classes;  // label id = position
  std::map<std::string, SplitInfo> splits;
};

inline constexpr const char* kManifestName = "dataset.json";

// Reads DIR/dataset.json (or the file itself). Unknown versions and missing
// fields are errors naming the file.
Result<DatasetManifest> read_manifest(const std::string& dir_or_file);
// Parses manifest JSON text; `name` is used in error messages.
Result<DatasetManifest> parse_manifest(std::string_view json, std::string_view name);
std::string format_manifest(const DatasetManifest& manifest);
// Writes DIR/dataset.json atomically.
Status write_manifest(const std::string& dir, const DatasetManifest& manifest);

// What to do with a bad sample: stop the run, leave it out quietly (listed
// in the summary), or leave it out with a warning as it happens.
enum class ErrorPolicy { kFail, kSkip, kWarn };
Result<ErrorPolicy> parse_error_policy(std::string_view name);
std::string_view error_policy_name(ErrorPolicy policy);

// One image to convert.
struct SourceItem {
  std::string path;  // as opened
  std::string key;   // relative path, stored as image/filename
  int64_t label = 0;
};

struct SourceList {
  std::vector<SourceItem> items;
  std::vector<std::string> classes;
  // Files seen but not taken (not .jpg/.jpeg/.png, or outside class folders).
  std::vector<std::string> ignored;
};

// An ImageFolder tree: SRC/CLASS/*.jpg|jpeg|png (any case), classes in
// sorted order, files sorted within each. With `classes` given, every
// class folder must be in it and label ids follow it.
Result<SourceList> list_image_folder(const std::string& root,
                                     const std::vector<std::string>& classes = {});
// A CSV or TSV list of `path,label` lines (a header line `path,label` is
// skipped; relative paths resolve against the list's folder). Labels are
// class names, or integer ids when every label is an integer. With
// `classes` given, a label outside it is an error naming the line.
Result<SourceList> read_list_file(const std::string& list_path,
                                  const std::vector<std::string>& classes = {});

struct ConvertProgress {
  uint64_t done = 0;  // images handled (written or skipped)
  uint64_t total = 0;
  uint64_t written = 0;
  uint64_t skipped = 0;
  uint64_t bytes_out = 0;
  double seconds = 0;
};

struct ConvertOptions {
  std::string split = "train";
  // Number of shards; 0 = as many as shard_bytes requires.
  int shards = 0;
  // Target shard size when shards == 0. 128 MB: large enough for
  // sequential reads to dominate, small enough to spread across workers.
  uint64_t shard_bytes = uint64_t{128} << 20;
  Compression compression = Compression::kNone;
  // Worker threads; 0 = one per core.
  int workers = 0;
  // Re-encode images whose longest side exceeds this (0 = never) as JPEG at
  // `quality`: cuts every later decode, at a cost in fidelity.
  int max_side = 0;
  int quality = 90;
  // Rewrite progressive JPEGs losslessly as sequential with optimised
  // Huffman tables (transcode_jpeg_baseline): same pixels, and every later
  // decode is cheaper, most of all a crop decode. Off by default: the
  // stored bytes then differ from the source files.
  bool rewrite_progressive = false;
  ErrorPolicy on_error = ErrorPolicy::kFail;
  // Shuffle the record order once, so shards mix classes (seeded: the
  // output is the same whatever `workers` is).
  bool shuffle = true;
  uint64_t seed = 0;
  // Decode every image (JPEG at 1/8 scale) to prove it whole, not just its
  // header. Costs a little time; catches truncated files.
  bool check_decode = true;
  uint64_t max_pixels = kDefaultMaxPixels;
  // Explicit class list (label ids = positions); empty = from the source,
  // or from an existing dataset.json in the output folder.
  std::vector<std::string> classes;
  // A partitioned conversion: convert part `part` (from 0) of `parts`, one
  // machine's share of many (0 parts: all of it, here). Shards are then
  // planned by count, so that every part places each record from the
  // listing alone: S = `shards`, or when that is 0, the listed files' total
  // size over `shard_bytes` rounded up (which stats every file: pass
  // `shards` to skip that), and record p of the shuffled listing goes to
  // shard p*S/images, exactly as `shards = S` on one machine. Part I writes
  // shards [I*S/N, (I+1)*S/N) under their final names, then its part record
  // OUT/.parts/{split}-part-{I:05d}-of-{N:05d}.json; finish_convert checks
  // the parts and writes dataset.json. Parts of one split may run at once,
  // on any machines sharing OUT; two runs of one part may not.
  int part = 0;
  int parts = 0;
  // Recorded in dataset.json.
  std::string command;
  // Called from the calling thread after each image, at most ~10 times/s.
  std::function<void(const ConvertProgress&)> progress;
  // Called from the calling thread for each bad file under kWarn.
  std::function<void(const std::string& file, const std::string& reason)> warn;
};

struct ConvertReport {
  uint64_t images = 0;     // inputs considered
  uint64_t written = 0;    // records written
  uint64_t resized = 0;    // re-encoded for max_side
  uint64_t rewritten = 0;  // progressive JPEGs rewritten as sequential
  uint64_t bytes_in = 0;   // image bytes read
  uint64_t bytes_out = 0;  // shard bytes written
  double seconds = 0;
  std::vector<std::pair<std::string, std::string>> skipped;  // file, reason
  std::vector<std::string> ignored;
  std::vector<ShardInfo> shards;
  std::vector<std::string> classes;
  // The split's shards: shards.size(), except for a part, whose `shards` are
  // its own share of these, numbered from first_shard.
  uint64_t shard_count = 0;
  uint64_t first_shard = 0;
};

// Converts an ImageFolder tree or list file into shards under out_dir
// (created if needed), then writes dataset.json last. Under kFail the first
// bad image stops the run with its file and reason, and nothing that looks
// complete is left behind. With options.parts > 0 it converts that part and
// writes its part record instead of dataset.json (see ConvertOptions::part).
Result<ConvertReport> convert_images(const std::string& src, const std::string& out_dir,
                                     const ConvertOptions& options);

struct FinishOptions {
  std::string split = "train";
  // Read every shard to compare its CRC32C with its part record's (sizes
  // are always compared). Reading is cheap next to converting; off, a shard
  // damaged after its part finished goes unnoticed until it is read.
  bool verify = true;
};

// Completes a partitioned conversion in out_dir: reads every part record of
// the split, checks that all N parts are there, made with one fingerprint
// (listing, shard count, options), and that each shard they name is in
// place with the recorded size (and CRC32C) and its index; then adds the
// split to dataset.json, removes the split's stale shards and its part
// records. A missing part or a missing, short or damaged shard is an error
// naming it (all of them, not only the first). The report holds the split's
// totals (`images`: the listing's).
Result<ConvertReport> finish_convert(const std::string& out_dir, const FinishOptions& options);

// ---- Inspection -----------------------------------------------------------

struct InspectOptions {
  // Deep check: every record decoded as an Example and its image decoded,
  // index files compared with the shards, shard checksums and counts
  // compared with dataset.json.
  bool verify = false;
  // Keys to read images and labels by; empty image key = detect.
  FeatureKeys keys{.image = ""};
  uint64_t max_pixels = kDefaultMaxPixels;
};

struct Problem {
  std::string file;
  int64_t offset = -1;  // byte offset of the record, -1 when not about one
  std::string reason;
  std::string to_string() const;
};

struct FeatureStats {
  std::string kind;      // "bytes_list", ..., or "mixed"
  uint64_t records = 0;  // records carrying the key
  uint64_t min_values = 0, max_values = 0;
};

struct RangeStats {
  uint64_t count = 0;
  double min = 0, max = 0, sum = 0;
  void add(double v);
  double mean() const { return count ? sum / count : 0; }
};

struct FileSummary {
  std::string path;
  Compression compression = Compression::kNone;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  uint64_t record_bytes = 0;  // payload bytes
  uint64_t problems = 0;
};

struct InspectReport {
  std::vector<FileSummary> files;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
  uint64_t record_bytes = 0;
  std::map<std::string, uint64_t> payloads;  // payload kind name -> records
  std::map<std::string, FeatureStats> schema;
  bool has_images = false;
  FeatureKeys keys;
  std::vector<std::string> classes;             // from dataset.json, when there is one
  std::map<int64_t, uint64_t> labels;           // int64 labels
  std::map<std::string, uint64_t> label_names;  // bytes labels
  std::map<std::string, uint64_t> image_formats;
  std::map<std::string, uint64_t> subsampling;  // JPEG only
  uint64_t progressive = 0;
  RangeStats width, height, image_bytes;
  std::vector<Problem> problems;
  bool ok() const { return problems.empty(); }
};

// Inspects dataset folders (through dataset.json), folders of record files,
// record files and glob patterns. Problems are collected, not fatal: the
// report lists each with its file, offset and reason. Fails only when a
// path cannot be resolved at all.
Result<InspectReport> inspect(const std::vector<std::string>& paths, const InspectOptions& options);

// Human-readable summary and machine-readable JSON of a report.
std::string format_inspect_text(const InspectReport& report);
std::string format_inspect_json(const InspectReport& report);

}  // namespace sluice
