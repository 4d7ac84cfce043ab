// Exporters: JSON lines for scripts, TensorBoard event files for people.
// Both write in place and make each write visible promptly, because their
// readers (tail -f, TensorBoard) read the files while training runs; they
// are logs, not artefacts, so they skip the temp-name + rename dance.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "base/file_util.h"
#include "base/mutex.h"
#include "sluice/example.h"
#include "sluice/record.h"
#include "sluice/telemetry.h"

namespace sluice {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// TensorFlow's name, with "sluice" where it puts its own suffix. Two
// writers created in the same second by one process would collide; rather
// than truncate the first, later ones get ".1", ".2", ... before the
// suffix. The mutex makes check-then-create atomic within the process;
// other processes differ in pid.
Mutex event_file_mutex;

std::string event_file_name(const std::filesystem::path& logdir) {
  std::string base = fmt::format("events.out.tfevents.{}.{}.{}",
                                 static_cast<int64_t>(unix_seconds()), host_name(), ::getpid());
  std::string name = base + ".sluice";
  std::error_code ec;
  for (int k = 1; std::filesystem::exists(logdir / name, ec); ++k) {
    name = fmt::format("{}.{}.sluice", base, k);
  }
  return (logdir / name).string();
}

}  // namespace

// ---- JsonLinesWriter ----

struct JsonLinesWriter::Impl {
  detail::File file;
  bool closed = false;
};

Result<std::unique_ptr<JsonLinesWriter>> JsonLinesWriter::create(const std::string& path,
                                                                 bool append) {
  SLUICE_ASSIGN_OR_RETURN(detail::File file,
                          append ? detail::File::append(path) : detail::File::create(path));
  std::unique_ptr<JsonLinesWriter> w(new JsonLinesWriter());
  w->impl_ = std::make_unique<Impl>();
  w->impl_->file = std::move(file);
  return w;
}

Status JsonLinesWriter::write(int64_t step, double wall_time,
                              const std::map<std::string, double>& values) {
  if (impl_->closed) return failed_precondition_error(impl_->file.path() + ": write after close");
  // ordered_json keeps "step" and "time" first, then names in map order, so
  // lines read well by eye and diff cleanly.
  nlohmann::ordered_json line;
  line["step"] = step;
  line["time"] = wall_time;
  for (const auto& [name, value] : values) {
    if (name == "step" || name == "time") {
      return invalid_argument_error(impl_->file.path() + ": value name '" + name +
                                    "' is reserved for the line's own field");
    }
    line[name] = value;  // NaN and infinities become null: JSON has no such numbers
  }
  // replace: a name that is not valid UTF-8 must not throw inside the library.
  std::string text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text += '\n';
  // One unbuffered write per line: a reader never sees half a line from a
  // writer that is still running, and nothing is lost if the process dies.
  return impl_->file.write_all(text.data(), text.size());
}

Status JsonLinesWriter::close() {
  if (impl_->closed) return Status();
  impl_->closed = true;
  return impl_->file.close();
}

JsonLinesWriter::~JsonLinesWriter() {
  if (impl_) close().ignore();
}

// ---- TensorBoardWriter ----

struct TensorBoardWriter::Impl {
  std::string path;
  std::unique_ptr<RecordWriter> writer;
  bool closed = false;
};

Result<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::create(const std::string& logdir) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) {
    return errno_error(logdir, "cannot create log folder", ec.value());
  }
  std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter());
  w->impl_ = std::make_unique<Impl>();
  {
    MutexLock lock(&event_file_mutex);
    w->impl_->path = event_file_name(logdir);
    // In place, not atomic: TensorBoard reads the file while it grows.
    SLUICE_ASSIGN_OR_RETURN(w->impl_->writer,
                            RecordWriter::create(w->impl_->path, {.atomic = false}));
  }
  // TensorBoard identifies event files by this first record; flush it at
  // once so even a run that logs nothing yet shows up.
  Event header;
  header.wall_time = unix_seconds();
  header.file_version = "brain.Event:2";
  SLUICE_RETURN_IF_ERROR(w->impl_->writer->write(encode_event(header)).status());
  SLUICE_RETURN_IF_ERROR(w->impl_->writer->flush());
  return w;
}

Status TensorBoardWriter::add_scalar(const std::string& tag, float value, int64_t step,
                                     double wall_time) {
  if (impl_->closed) return failed_precondition_error(impl_->path + ": add_scalar after close");
  if (tag.empty()) return invalid_argument_error(impl_->path + ": scalar with an empty tag");
  Event event;
  event.wall_time = wall_time;
  event.step = step;
  event.values.push_back(SummaryValue{
      .tag = tag, .kind = "simple_value", .simple_value = value, .plugin_name = "scalars"});
  return impl_->writer->write(encode_event(event)).status();
}

Status TensorBoardWriter::flush() {
  if (impl_->closed) return Status();
  return impl_->writer->flush();
}

Status TensorBoardWriter::close() {
  if (impl_->closed) return Status();
  impl_->closed = true;
  return impl_->writer->close();
}

const std::string& TensorBoardWriter::path() const {
  return impl_->path;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (impl_ && impl_->writer) close().ignore();
}

}  // namespace sluice
