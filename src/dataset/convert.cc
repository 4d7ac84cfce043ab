// convert: images -> shards. Workers read, check and (optionally) re-encode
// images and encode Examples in parallel; the calling thread writes records
// strictly in input order, so the bytes do not depend on the worker count.
// At most `window` prepared records wait at once, which bounds memory.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <thread>

#include "base/file_util.h"
#include "base/mutex.h"
#include "dataset/convert_output.h"
#include "dataset/convert_part.h"
#include "dataset/convert_remote.h"
#include "remote/url.h"
#include "sluice/dataset.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxImageFileBytes = uint64_t{1} << 30;

// splitmix64: a tiny, well-mixed generator whose output is fixed by its
// seed on every platform (std::shuffle's algorithm is not).
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

std::vector<size_t> input_order(size_t n, bool shuffle, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (!shuffle) return order;
  SplitMix rng{seed ^ 0x736c75696365ull};  // "sluice"
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
  return order;
}

// One prepared sample: the encoded Example, or why there is none.
struct Prepared {
  Status status;
  std::string record;
  uint64_t bytes_in = 0;
  bool resized = false;
  bool rewritten = false;
};

// image/channels: the channels TensorFlow's decode_image (channels=0)
// returns for the encoded bytes, so (height, width, channels) is the shape a
// TensorFlow reader gets. JPEG: 1 for grey, else 3 (CMYK and YCCK come out
// RGB); PNG: its colour type's, a tRNS chunk adding alpha.
int encoded_channels(const ImageInfo& info) {
  if (info.format != ImageFormat::kPng) return info.components == 1 ? 1 : 3;
  bool adds_alpha = info.transparency && (info.components == 1 || info.components == 3);
  return info.components + (adds_alpha ? 1 : 0);
}

// An image as it will be stored: its bytes and what the record says of them.
struct Stored {
  std::string encoded;
  ImageFormat format;
  int width, height, channels;
};

// --max-side: an image whose longer side is over it, re-encoded as a JPEG
// at --quality with that side at max_side.
Status shrink(const ConvertOptions& options, Stored* s) {
  SLUICE_ASSIGN_OR_RETURN(
      Image image, decode_image(s->encoded, DecodeOptions{.max_pixels = options.max_pixels}));
  const double f = static_cast<double>(options.max_side) / std::max(s->width, s->height);
  const int w = std::max(1, static_cast<int>(std::lround(s->width * f)));
  const int h = std::max(1, static_cast<int>(std::lround(s->height * f)));
  SLUICE_ASSIGN_OR_RETURN(s->encoded, encode_jpeg(resize_image(image, w, h), options.quality));
  s->format = ImageFormat::kJpeg;
  s->width = w;
  s->height = h;
  s->channels = 3;
  return Status();
}

std::string example_record(const SourceItem& item, const std::vector<std::string>& classes,
                           Stored s) {
  Example e;
  e.features["image/encoded"] = Feature::of_bytes({std::move(s.encoded)});
  e.features["image/format"] = Feature::of_bytes({std::string(image_format_name(s.format))});
  e.features["image/class/label"] = Feature::of_int64s({item.label});
  e.features["image/class/text"] = Feature::of_bytes({classes.at(static_cast<size_t>(item.label))});
  e.features["image/height"] = Feature::of_int64s({s.height});
  e.features["image/width"] = Feature::of_int64s({s.width});
  e.features["image/channels"] = Feature::of_int64s({s.channels});
  e.features["image/filename"] = Feature::of_bytes({item.key});
  return encode_example(e);
}

// Reads, checks and (per the options) shrinks or rewrites one image into
// its record; a failure names the file.
Status prepare_record(const SourceItem& item, const std::vector<std::string>& classes,
                      const ConvertOptions& options, Prepared* p) {
  SLUICE_ASSIGN_OR_RETURN(std::string bytes, detail::read_file(item.path, kMaxImageFileBytes));
  p->bytes_in = bytes.size();
  if (bytes.empty()) return data_loss_error(item.path + ": empty file");
  auto info = options.check_decode ? check_image(bytes, options.max_pixels)
                                   : probe_image(bytes, options.max_pixels);
  if (!info.ok()) return info.status().with_prefix(item.path);
  Stored s{std::move(bytes), info->format, info->width, info->height, encoded_channels(*info)};
  if (options.max_side > 0 && std::max(s.width, s.height) > options.max_side) {
    if (Status st = shrink(options, &s); !st.ok()) return st.with_prefix(item.path);
    p->resized = true;
  } else if (options.rewrite_progressive && s.format == ImageFormat::kJpeg && info->progressive) {
    auto sequential = transcode_jpeg_baseline(s.encoded, options.max_pixels);
    if (sequential.ok()) {
      s.encoded = std::move(sequential).value();
      p->rewritten = true;
    } else if (sequential.status().code() != StatusCode::kFailedPrecondition) {
      return sequential.status().with_prefix(item.path);
    }  // else: no lossless sequential copy exists; kept as it is
  }
  p->record = example_record(item, classes, std::move(s));
  return Status();
}

Prepared prepare(const SourceItem& item, const std::vector<std::string>& classes,
                 const ConvertOptions& options) {
  Prepared p;
  p.status = prepare_record(item, classes, options, &p);
  return p;
}

// The ordered hand-off between workers and the writer: slot k holds the
// result for position k once ready. Workers claim positions in order and
// wait while they are more than `window` ahead of the writer.
class ReorderBuffer {
 public:
  ReorderBuffer(size_t n, size_t window) : n_(n), results_(window), window_(window) {}

  // Returns the next position to prepare, or nullopt when done/stopped.
  std::optional<size_t> claim(std::stop_token st) {
    MutexLock lock(&mu_);
    cv_.wait(mu_, st, [&] {
      mu_.assert_held();
      return next_ >= n_ || next_ < consumed_ + window_;
    });
    if (st.stop_requested() || next_ >= n_) return std::nullopt;
    return next_++;
  }

  void put(size_t k, Prepared p) {
    {
      MutexLock lock(&mu_);
      results_[k % window_] = std::move(p);
    }
    cv_.notify_all();
  }

  Prepared take(size_t k) {
    Prepared p;
    {
      MutexLock lock(&mu_);
      cv_.wait(mu_, [&] {
        mu_.assert_held();
        return results_[k % window_].has_value();
      });
      p = std::move(*results_[k % window_]);
      results_[k % window_].reset();
      consumed_ = k + 1;
    }
    cv_.notify_all();
    return p;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  const size_t n_;
  // A ring: position k lives in slot k % window_; claim() keeps workers
  // within window_ of the writer, so slots never collide.
  std::vector<std::optional<Prepared>> results_ SLUICE_GUARDED_BY(mu_);
  size_t next_ SLUICE_GUARDED_BY(mu_) = 0;
  size_t consumed_ SLUICE_GUARDED_BY(mu_) = 0;
  size_t window_;
};

// Shards being written under temporary names (".split-00003.partial", by
// their number in the split); renamed to their final `-of-N` names only
// once every shard of this run is done.
class ShardSet {
 public:
  ShardSet(std::string dir, std::string split, const ConvertOptions& options,
           detail::ShardPlan plan)
      : dir_(std::move(dir)), split_(std::move(split)), options_(options), plan_(plan) {}
  ~ShardSet() {
    writer_.reset();
    for (const Shard& s : shards_) {
      std::error_code ec;
      if (!finished_) fs::remove(s.partial, ec);
    }
  }

  Status write(size_t position, std::string_view record) {
    size_t want = current_shard(position, record.size());
    while (shards_.empty() || shards_.size() - 1 < want) SLUICE_RETURN_IF_ERROR(open_next());
    SLUICE_ASSIGN_OR_RETURN(uint64_t offset, writer_->write(record));
    shards_.back().index.push_back({offset, framed_size(record.size())});
    return Status();
  }

  // Closes the last shard (opening empty ones up to the plan's), then puts
  // them all in place with their indexes.
  Result<std::vector<ShardInfo>> finish() {
    size_t want = plan_.count ? plan_.end - plan_.first : std::max<size_t>(1, shards_.size());
    while (shards_.size() < want) SLUICE_RETURN_IF_ERROR(open_next());
    if (writer_) SLUICE_RETURN_IF_ERROR(writer_->close());
    writer_.reset();
    std::vector<ShardInfo> out;
    const size_t n = plan_.count ? plan_.count : shards_.size();
    for (size_t i = 0; i < shards_.size(); ++i) {
      ShardInfo info;
      info.file = fmt::format("{}-{:05d}-of-{:05d}.tfrecord", split_, plan_.first + i, n);
      info.index = fmt::format("{}-{:05d}-of-{:05d}.idx", split_, plan_.first + i, n);
      info.records = shards_[i].index.size();
      SLUICE_RETURN_IF_ERROR(
          detail::publish_shard(dir_, shards_[i].partial, shards_[i].index, &info));
      out.push_back(std::move(info));
    }
    finished_ = true;
    SLUICE_RETURN_IF_ERROR(detail::sync_parent_dir((fs::path(dir_) / "x").string()));
    return out;
  }

 private:
  struct Shard {
    std::string partial;
    std::vector<IndexEntry> index;
  };

  // This run's shard (from 0) for the record at `position`.
  size_t current_shard(size_t position, size_t record_bytes) const {
    if (plan_.count) return plan_.shard_of(position) - plan_.first;
    if (shards_.empty()) return 0;
    bool full = !shards_.back().index.empty() &&
                writer_->position() + framed_size(record_bytes) > options_.shard_bytes;
    return shards_.size() - 1 + (full ? 1 : 0);
  }

  Status open_next() {
    if (writer_) SLUICE_RETURN_IF_ERROR(writer_->close());
    Shard s;
    const size_t number = plan_.first + shards_.size();
    s.partial = (fs::path(dir_) / fmt::format(".{}-{:05d}.partial", split_, number)).string();
    RecordWriterOptions wo;
    wo.compression = options_.compression;
    SLUICE_ASSIGN_OR_RETURN(writer_, RecordWriter::create(s.partial, wo));
    shards_.push_back(std::move(s));
    return Status();
  }

  std::string dir_;
  std::string split_;
  const ConvertOptions& options_;
  const detail::ShardPlan plan_;
  std::vector<Shard> shards_;
  std::unique_ptr<RecordWriter> writer_;
  bool finished_ = false;
};

Status validate(const ConvertOptions& o) {
  static const std::regex kSplit("[A-Za-z0-9_.]+");
  if (!std::regex_match(o.split, kSplit)) {
    return invalid_argument_error("split name '" + o.split +
                                  "' may use only letters, digits, '_' and '.'");
  }
  if (o.shards < 0) return invalid_argument_error("--shards must be 0 or more");
  if (o.shards == 0 && o.shard_bytes == 0)
    return invalid_argument_error("--shard-size must be above 0");
  if (o.workers < 0) return invalid_argument_error("--workers must be 0 (one per core) or more");
  if (o.max_side < 0) return invalid_argument_error("--max-side must be 0 (off) or more");
  if (o.quality < 1 || o.quality > 100)
    return invalid_argument_error("--quality must be within 1..100");
  if (o.compression == Compression::kAuto)
    return invalid_argument_error("--compression must be none, gzip or zlib");
  if (o.parts < 0 || o.parts > 99999)
    return invalid_argument_error("--part I/N: N must be within 1..99999");
  if (o.parts > 0 && (o.part < 0 || o.part >= o.parts)) {
    return invalid_argument_error(
        fmt::format("--part {}/{}: I must be within 0..{}", o.part, o.parts, o.parts - 1));
  }
  return Status();
}

}  // namespace

namespace {

// A killed convert leaves its temporaries in the folder: shards closed but
// not yet renamed (".train-00001.partial") and files being written under
// ".tmp-PID" (".train-00002.partial.tmp-PID", "train-...idx.tmp-PID",
// "dataset.json.tmp-PID"). A rerun removes those of its split whose writer
// is gone, so the folder ends as an uninterrupted run leaves it. Two
// converts of one split into one folder at once are not supported (they
// would write the same shard names).
void remove_dead_temporaries(const std::string& dir, const std::string& split) {
  const std::string quoted = detail::regex_quote(split);
  const std::regex ours("(\\." + quoted + "-[0-9]{5}\\.partial|" + quoted +
                        "-[0-9]{5}-of-[0-9]{5}\\.idx|dataset\\.json)(\\.tmp-([0-9]+))?");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, ours)) continue;
    const bool temporary = m[3].matched;
    const bool partial = name.find(".partial") != std::string::npos;
    if (temporary ? !detail::temp_writer_alive(m[3].str()) : partial) fs::remove(entry.path(), ec);
  }
}

}  // namespace

namespace {

// The images to convert, and the dataset's manifest when the folder has
// one already (another split: the classes must match).
Result<SourceList> open_source(const std::string& src, const std::string& out_dir,
                               const ConvertOptions& options, DatasetManifest* manifest) {
  std::error_code ec;
  const bool have_manifest = fs::exists(fs::path(out_dir) / kManifestName, ec);
  if (have_manifest) {
    SLUICE_ASSIGN_OR_RETURN(*manifest, read_manifest(out_dir));
  }
  std::vector<std::string> classes = !options.classes.empty() ? options.classes : manifest->classes;
  SourceList source;
  if (!fs::exists(src, ec)) return not_found_error(src + ": no such file or folder");
  if (fs::is_directory(src, ec)) {
    SLUICE_ASSIGN_OR_RETURN(source, list_image_folder(src, classes));
  } else {
    SLUICE_ASSIGN_OR_RETURN(source, read_list_file(src, classes));
  }
  if (have_manifest && !manifest->classes.empty() && source.classes != manifest->classes) {
    return invalid_argument_error(fmt::format("{}: its class list differs from the one in {}/{}",
                                              src, out_dir, kManifestName));
  }
  return source;
}

// Workers prepare the images in parallel; this thread writes them to the
// shards in input order, skipping (or failing on) bad ones per on_error.
// Only the positions of this run's shards are prepared (all, but for a part).
Status write_records(const SourceList& source, const std::vector<size_t>& order,
                     const detail::ShardPlan& plan, const ConvertOptions& options,
                     Clock::time_point t0, ShardSet* shards, ConvertReport* report) {
  const size_t first = plan.begin_position();
  const size_t n = plan.end_position() - first;
  const size_t workers = options.workers > 0 ? static_cast<size_t>(options.workers)
                                             : std::max(1u, std::thread::hardware_concurrency());
  ReorderBuffer buffer(n, 4 * workers + 8);
  Status failure;
  std::vector<std::jthread> pool;
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&](std::stop_token st) {
      while (auto k = buffer.claim(st)) {
        buffer.put(*k, prepare(source.items[order[first + *k]], source.classes, options));
      }
    });
  }
  ConvertProgress progress;
  progress.total = n;
  auto last_report = Clock::now();
  for (size_t k = 0; k < n; ++k) {
    Prepared p = buffer.take(k);
    report->bytes_in += p.bytes_in;
    if (!p.status.ok()) {
      const std::string& file = source.items[order[first + k]].path;
      std::string reason(p.status.message());
      if (options.on_error == ErrorPolicy::kFail) {
        failure = p.status;
        break;
      }
      if (options.on_error == ErrorPolicy::kWarn && options.warn) options.warn(file, reason);
      report->skipped.emplace_back(file, reason);
    } else {
      report->resized += p.resized;
      report->rewritten += p.rewritten;
      failure = shards->write(first + k, p.record);
      if (!failure.ok()) break;
      ++report->written;
    }
    progress.done = k + 1;
    progress.written = report->written;
    progress.skipped = report->skipped.size();
    progress.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (options.progress &&
        (k + 1 == n || Clock::now() - last_report > std::chrono::milliseconds(100))) {
      last_report = Clock::now();
      options.progress(progress);
    }
  }
  // Shutdown order: request stop, then the jthreads join as `pool` dies,
  // before `buffer` (declared earlier) is destroyed.
  for (auto& t : pool) t.request_stop();
  return failure;
}

}  // namespace

namespace {

std::string absolute(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

Status publish_whole(const std::string& src, const std::string& out_dir, const ConvertOptions& o,
                     const ConvertReport& report) {
  detail::remove_stale_shards(out_dir, o.split, report.shards);
  // Part records of this split describe shards this run has replaced.
  detail::remove_part_records(out_dir, o.split, [](int, int) { return true; });
  detail::remove_empty_parts_folder(out_dir);
  SplitInfo split;
  split.compression = o.compression;
  split.records = report.written;
  split.shards = report.shards;
  split.skipped = report.skipped;
  split.command = o.command;
  split.source = absolute(src);
  split.created_by = "sluice " SLUICE_VERSION;
  // Last: the dataset is now whole.
  return detail::publish_split(out_dir, o.split, report.classes, std::move(split));
}

}  // namespace

Result<ConvertReport> convert_images(const std::string& src, const std::string& out_dir,
                                     const ConvertOptions& options) {
  if (remote::is_url(out_dir)) return detail::convert_to_url(src, out_dir, options);
  SLUICE_RETURN_IF_ERROR(validate(options));
  auto t0 = Clock::now();
  DatasetManifest manifest;
  SLUICE_ASSIGN_OR_RETURN(SourceList source, open_source(src, out_dir, options, &manifest));
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return errno_error(out_dir, "cannot create folder", ec.value());
  const detail::ShardPlan plan = detail::plan_shards(source, options);
  if (options.parts > 0) {
    detail::prepare_part(out_dir, options, plan);
  } else {
    remove_dead_temporaries(out_dir, options.split);
  }

  ConvertReport report;
  report.classes = source.classes;
  report.ignored = source.ignored;
  report.images = source.items.size();
  ShardSet shards(out_dir, options.split, options, plan);
  SLUICE_RETURN_IF_ERROR(
      write_records(source, input_order(source.items.size(), options.shuffle, options.seed), plan,
                    options, t0, &shards, &report));
  // A part may hold only bad images, or none; finish_convert checks the whole.
  if (report.written == 0 && options.parts == 0) {
    return data_loss_error(src + ": no image could be converted (" +
                           std::to_string(report.skipped.size()) + " bad files)");
  }
  SLUICE_ASSIGN_OR_RETURN(report.shards, shards.finish());
  report.shard_count = plan.count ? plan.count : report.shards.size();
  report.first_shard = plan.first;
  for (const ShardInfo& s : report.shards) report.bytes_out += s.bytes;
  SLUICE_RETURN_IF_ERROR(options.parts > 0
                             ? detail::publish_part(src, out_dir, options, source, plan, report)
                             : publish_whole(src, out_dir, options, report));
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return report;
}

}  // namespace sluice
