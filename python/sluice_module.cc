// The Python module `sluice._sluice`: the C++ pipeline, convert and inspect,
// with batches handed to PyTorch, NumPy and JAX through DLPack (zero copy).
// No second implementation: everything here is argument conversion,
// lifetime management and the GIL.
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <mutex>
#include <sstream>

#include "device/libraries.h"
#include "pipeline/stats_json.h"
#include "sluice/dataset.h"
#include "sluice/pipeline.h"
#include "sluice/pipeline_options.h"
#include "sluice/telemetry.h"

namespace py = pybind11;

namespace sluice::python {
namespace {

PyObject* g_data_error = nullptr;  // sluice.DataError

// Raises the Python exception that fits a failed Status, with its message
// (which names the file, offset and reason).
[[noreturn]] void raise(const Status& s) {
  std::string m(s.message());
  switch (s.code()) {
    case StatusCode::kInvalidArgument: throw py::value_error(m);
    case StatusCode::kNotFound: PyErr_SetString(PyExc_FileNotFoundError, m.c_str()); break;
    case StatusCode::kPermissionDenied: PyErr_SetString(PyExc_PermissionError, m.c_str()); break;
    case StatusCode::kDataLoss: PyErr_SetString(g_data_error, m.c_str()); break;
    case StatusCode::kResourceExhausted: PyErr_SetString(PyExc_MemoryError, m.c_str()); break;
    case StatusCode::kOutOfRange: throw py::stop_iteration(m);
    default: PyErr_SetString(PyExc_RuntimeError, m.c_str()); break;
  }
  throw py::error_already_set();
}

template <typename T>
T take(Result<T> r) {
  if (!r.ok()) raise(r.status());
  return std::move(r).value();
}

void check(const Status& s) {
  if (!s.ok()) raise(s);
}

// Python value -> the option's text form.
std::string option_text(const std::string& name, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v))
    return py::str(v).cast<std::string>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::sequence>(v)) {
    std::string out;
    for (const py::handle& x : v.cast<py::sequence>()) {
      if (!py::isinstance<py::int_>(x) && !py::isinstance<py::float_>(x)) {
        throw py::type_error(name + ": expected numbers in the sequence");
      }
      out += (out.empty() ? "" : ",") + py::str(x).cast<std::string>();
    }
    return out;
  }
  throw py::type_error(name + ": unsupported type " + py::str(v.get_type()).cast<std::string>());
}

DLDataType dl_dtype(DType d) {
  switch (d) {
    case DType::kUint8: return {kDLUInt, 8, 1};
    case DType::kFloat32: return {kDLFloat, 32, 1};
    case DType::kFloat16: return {kDLFloat, 16, 1};
    case DType::kBFloat16: return {kDLBfloat, 16, 1};
  }
  return {kDLUInt, 8, 1};
}

class PyPipeline;

// One batch: owns its ring slot until dropped (or release()d); every
// DLPack tensor or NumPy view made from it keeps it alive.
class PyBatch {
 public:
  PyBatch(std::shared_ptr<Pipeline> owner, Batch b)
      : owner_(std::move(owner)), batch_(std::move(b)) {
    const SampleSpec& s = batch_.spec();
    int64_t n = static_cast<int64_t>(batch_.size());
    shape_ = s.layout == Layout::kNCHW ? std::vector<int64_t>{n, 3, s.height, s.width}
                                       : std::vector<int64_t>{n, s.height, s.width, 3};
  }
  ~PyBatch() { release(); }

  // On a GPU the device buffer is reused only after the work queued on the
  // stream the consumer named in __dlpack__ (the legacy default stream by
  // default) at the time the batch is released.
  void release() {
    batch_.release_after(consumer_stream_);
    released_ = true;
  }
  void set_consumer_stream(void* stream) { consumer_stream_ = stream; }
  void check_alive() const {
    if (released_)
      throw py::value_error("this batch was released: its memory went back to the ring");
  }
  const Batch& batch() const { return batch_; }
  const std::vector<int64_t>& shape() const { return shape_; }

  py::array labels() const {
    check_alive();
    return py::array_t<int64_t>(static_cast<py::ssize_t>(batch_.size()), batch_.labels());
  }
  py::array sample_ids() const {
    check_alive();
    return py::array_t<uint64_t>(static_cast<py::ssize_t>(batch_.size()), batch_.sample_ids());
  }

  std::string dtype() const { return std::string(dtype_name(batch_.spec().dtype)); }

 private:
  std::shared_ptr<Pipeline> owner_;  // outlives the batch's slot
  Batch batch_;
  std::vector<int64_t> shape_;
  bool released_ = false;
  void* consumer_stream_ = nullptr;
};

struct DLContext {
  DLManagedTensor tensor;
  std::vector<int64_t> shape;
  PyObject* owner;  // a reference to the PyBatch
};

void dl_deleter(DLManagedTensor* t) {
  auto* ctx = static_cast<DLContext*>(t->manager_ctx);
  py::gil_scoped_acquire gil;
  Py_XDECREF(ctx->owner);
  delete ctx;
}

void capsule_destructor(PyObject* capsule) {
  // Only when nobody consumed it (a consumer renames it "used_dltensor").
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (t && t->deleter) t->deleter(t);
  }
}

// The array API's stream argument for CUDA: None or 1 the legacy default
// stream, 2 the per-thread default stream, -1 no synchronisation, other
// values a cudaStream_t.
py::capsule to_dlpack(py::object self, py::object stream) {
  PyBatch& b = self.cast<PyBatch&>();
  b.check_alive();
  if (b.batch().device() < 0) {
    if (!stream.is_none() && stream.cast<int64_t>() != -1) {
      throw py::value_error("stream: a CPU batch takes no stream (use None)");
    }
  } else {
    int64_t s = stream.is_none() ? 1 : stream.cast<int64_t>();
    if (s == 0) throw py::value_error("stream: 0 is ambiguous for CUDA (use 1 or 2)");
    if (s != -1) {
      void* cuda_stream = s == 1 ? nullptr : reinterpret_cast<void*>(static_cast<intptr_t>(s));
      if (Status st = b.batch().wait_on(cuda_stream); !st.ok()) raise(st);
      // The per-thread default stream (2) names another stream on the
      // thread that may release the batch: release on the legacy stream,
      // which waits for every thread's default stream.
      b.set_consumer_stream(s == 2 ? nullptr : cuda_stream);
    }
  }
  auto* ctx = new DLContext();
  ctx->shape = b.shape();
  ctx->owner = self.ptr();
  Py_INCREF(ctx->owner);
  DLTensor& t = ctx->tensor.dl_tensor;
  t.data = const_cast<void*>(b.batch().data());
  t.device = b.batch().device() < 0 ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, b.batch().device()};
  t.ndim = 4;
  t.dtype = dl_dtype(b.batch().spec().dtype);
  t.shape = ctx->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  ctx->tensor.manager_ctx = ctx;
  ctx->tensor.deleter = dl_deleter;
  return py::capsule(&ctx->tensor, "dltensor", capsule_destructor);
}

py::array to_numpy(py::object self) {
  PyBatch& b = self.cast<PyBatch&>();
  b.check_alive();
  py::dtype dt;
  switch (b.batch().spec().dtype) {
    case DType::kUint8: dt = py::dtype::of<uint8_t>(); break;
    case DType::kFloat32: dt = py::dtype::of<float>(); break;
    case DType::kFloat16: dt = py::dtype("float16"); break;
    case DType::kBFloat16:
      throw py::type_error(
          "NumPy has no bfloat16: use torch.from_dlpack(batch) or dtype='float16'");
  }
  if (b.batch().device() >= 0) {
    // On a GPU: a host copy (for checks; training takes the DLPack tensor).
    py::array out(dt, b.shape());
    if (Status st = b.batch().copy_to_host(out.mutable_data()); !st.ok()) raise(st);
    return out;
  }
  // The array's base is the batch: the slot stays held while the array lives.
  return py::array(dt, b.shape(), {}, b.batch().data(), self);
}

class PyPipeline {
 public:
  PyPipeline(const py::object& path, const py::kwargs& kwargs) {
    PipelineOptions o;
    if (py::isinstance<py::str>(path)) {
      o.sources = {path.cast<std::string>()};
    } else if (py::isinstance<py::sequence>(path)) {
      o.sources = path.cast<std::vector<std::string>>();
    } else {
      throw py::type_error("path: expected a str or a list of str");
    }
    for (const auto& [key, value] : kwargs) {
      std::string name = key.cast<std::string>();
      if (value.is_none()) continue;
      bool known = false;
      for (const OptionSpec& spec : pipeline_option_specs()) known |= spec.name == name;
      if (!known)
        throw py::type_error("Pipeline() got an unexpected keyword argument '" + name + "'");
      Status s = apply_pipeline_option(name, option_text(name, value), &o);
      if (!s.ok()) throw py::value_error(std::string(s.message()));
    }
    Result<std::unique_ptr<Pipeline>> p = [&] {
      py::gil_scoped_release release;
      return Pipeline::create(o);
    }();
    pipe_ = std::shared_ptr<Pipeline>(take(std::move(p)));
    start_ = std::chrono::steady_clock::now();
  }

  size_t len() const { return pipe_->batches_per_epoch(); }

  void set_epoch(uint64_t epoch) {
    Status st;
    {
      // GIL first, then the lock: a thread holding the GIL never waits on
      // mu_ while the holder of mu_ waits for the GIL.
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      st = pipe_->set_epoch(epoch);
    }
    check(st);
  }

  // A new `for` loop restarts the current epoch once it is finished, as a
  // DataLoader does; a loop after load_state_dict continues mid-epoch.
  PyPipeline& iter() {
    Status st;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      PipelineState s = pipe_->state();
      if (s.batches >= pipe_->batches_per_epoch()) st = pipe_->set_epoch(s.epoch);
    }
    check(st);
    return *this;
  }

  py::tuple next() {
    Result<Batch> b = [&] {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      return pipe_->next();
    }();
    if (b.status().code() == StatusCode::kOutOfRange) throw py::stop_iteration();
    py::object batch =
        py::cast(new PyBatch(pipe_, take(std::move(b))), py::return_value_policy::take_ownership);
    py::object labels = batch.attr("labels");
    return py::make_tuple(batch, labels);
  }

  py::dict state_dict() const {
    PipelineState s = pipe_->state();
    py::dict d;
    d["epoch"] = s.epoch;
    d["batches"] = s.batches;
    return d;
  }

  void load_state_dict(const py::dict& d) {
    if (!d.contains("epoch") || !d.contains("batches")) {
      throw py::value_error(
          "state: expected a dict with 'epoch' and 'batches' (from state_dict())");
    }
    PipelineState s{d["epoch"].cast<uint64_t>(), d["batches"].cast<uint64_t>()};
    Status st;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mu_);
      st = pipe_->restore(s);
    }
    check(st);
  }

  py::dict stats() const {
    PipelineStats s = pipe_->stats();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    py::dict d;
    const py::object loads = py::module_::import("json").attr("loads");
    Verdict v = bottleneck_verdict(verdict_input(s, wall));
    d["stages"] = loads(stages_json(s, wall).dump());
    d["samples"] = s.samples;
    d["batches"] = s.batches;
    d["bad_samples"] = s.bad_samples;
    d["consumer_wait_seconds"] = s.consumer_wait_seconds;
    d["seconds"] = wall;
    d["workers"] = s.workers;
    d["active_workers"] = s.active_workers;
    d["prefetch"] = s.prefetch;
    d["tuning"] = s.tuning;
    d["verdict"] = v.text;
    d["bottleneck"] = v.bottleneck;
    if (s.device >= 0) d["device"] = loads(device_json(s, wall, -1).dump());
    if (s.remote) d["remote"] = loads(remote_json(s).dump());
    py::list events;
    for (const SampleEvent& e : pipe_->events()) events.append(py::str(e.to_string()));
    d["events"] = events;
    return d;
  }

  uint64_t records() const { return pipe_->records(); }
  std::vector<std::string> classes() const { return pipe_->classes(); }

 private:
  std::shared_ptr<Pipeline> pipe_;
  std::mutex mu_;  // one consumer at a time: calls from several threads queue
  std::chrono::steady_clock::time_point start_;
};

std::string pipeline_doc() {
  std::ostringstream d;
  d << "Pipeline(path, **options)\n\n"
       "Streams decoded, augmented batches from a dataset folder (dataset.json), TFRecord\n"
       "files or globs, or an ImageFolder tree. Iterate it for (images, labels) pairs:\n"
       "images implements __dlpack__ (torch.from_dlpack(images) shares its memory) and\n"
       ".numpy(); labels is an int64 NumPy array. A batch's memory returns to the ring\n"
       "when the batch and every view of it are dropped. With device='cuda' images are on\n"
       "the GPU: __dlpack_device__ says CUDA, and __dlpack__(stream=S) makes S wait for the\n"
       "batch; its device buffer is reused once S has finished the work queued when the\n"
       "batch is dropped.\n\n"
       "Options (the same as `sluice bench`):\n";
  for (const OptionSpec& s : pipeline_option_specs()) {
    d << "  " << s.name << " = " << (s.default_value.empty() ? "''" : s.default_value) << ": "
      << s.help << "\n";
  }
  return d.str();
}

// convert()'s keyword arguments, declared once: each one's value as
// ConvertOptions holds it (for the signature in the docstring, taken from
// a default ConvertOptions) and how a Python value is stored there.
struct ConvertKwarg {
  const char* name;
  std::function<py::object(const ConvertOptions&)> get;
  std::function<void(const py::handle&, ConvertOptions*)> set;
};

const std::vector<ConvertKwarg>& convert_kwargs() {
  using O = ConvertOptions;
  using H = const py::handle&;
  constexpr double kMiB = 1024.0 * 1024.0;
  static const std::vector<ConvertKwarg> table = {
      {"split", [](const O& o) { return py::cast(o.split); },
       [](H v, O* o) { o->split = v.cast<std::string>(); }},
      {"shards", [](const O& o) { return py::cast(o.shards); },
       [](H v, O* o) { o->shards = v.cast<int>(); }},
      {"shard_size_mb", [](const O& o) { return py::cast(o.shard_bytes / kMiB); },
       [](H v, O* o) { o->shard_bytes = static_cast<uint64_t>(v.cast<double>() * kMiB); }},
      {"compression",
       [](const O& o) { return py::cast(std::string(compression_name(o.compression))); },
       [](H v, O* o) { o->compression = take(parse_compression(v.cast<std::string>())); }},
      {"workers", [](const O& o) { return py::cast(o.workers); },
       [](H v, O* o) { o->workers = v.cast<int>(); }},
      {"max_side", [](const O& o) { return py::cast(o.max_side); },
       [](H v, O* o) { o->max_side = v.cast<int>(); }},
      {"quality", [](const O& o) { return py::cast(o.quality); },
       [](H v, O* o) { o->quality = v.cast<int>(); }},
      {"on_error", [](const O& o) { return py::cast(std::string(error_policy_name(o.on_error))); },
       [](H v, O* o) { o->on_error = take(parse_error_policy(v.cast<std::string>())); }},
      {"shuffle", [](const O& o) { return py::cast(o.shuffle); },
       [](H v, O* o) { o->shuffle = v.cast<bool>(); }},
      {"seed", [](const O& o) { return py::cast(o.seed); },
       [](H v, O* o) { o->seed = v.cast<uint64_t>(); }},
      {"check",
       [](const O& o) { return py::cast(std::string(o.check_decode ? "decode" : "header")); },
       [](H v, O* o) {
         std::string c = v.cast<std::string>();
         if (c != "decode" && c != "header")
           throw py::value_error("check: expected decode or header, got '" + c + "'");
         o->check_decode = c == "decode";
       }},
      {"rewrite_progressive", [](const O& o) { return py::cast(o.rewrite_progressive); },
       [](H v, O* o) { o->rewrite_progressive = v.cast<bool>(); }},
      {"max_pixels", [](const O& o) { return py::cast(o.max_pixels); },
       [](H v, O* o) { o->max_pixels = v.cast<uint64_t>(); }},
      {"classes",
       [](const O& o) { return o.classes.empty() ? py::object(py::none()) : py::cast(o.classes); },
       [](H v, O* o) { o->classes = v.cast<std::vector<std::string>>(); }},
      // A partitioned conversion: part `part` (from 0) of `parts`; then
      // finish_convert(out). parts=0: the whole listing in one run.
      {"part", [](const O& o) { return py::cast(o.part); },
       [](H v, O* o) { o->part = v.cast<int>(); }},
      {"parts", [](const O& o) { return py::cast(o.parts); },
       [](H v, O* o) { o->parts = v.cast<int>(); }},
  };
  return table;
}

std::string convert_doc() {
  const ConvertOptions defaults;
  std::string args;
  for (const ConvertKwarg& k : convert_kwargs()) {
    args += std::string(", ") + k.name + "=" + py::repr(k.get(defaults)).cast<std::string>();
  }
  return "convert(src, out" + args +
         ") -> dict\nConverts an ImageFolder tree or a path,label list into TFRecord shards "
         "(as `sluice convert`).";
}

// convert()'s and finish_convert()'s answer.
py::dict report_dict(const ConvertReport& rep) {
  py::dict d;
  d["images"] = rep.images;
  d["written"] = rep.written;
  d["resized"] = rep.resized;
  d["rewritten"] = rep.rewritten;
  d["seconds"] = rep.seconds;
  d["bytes_out"] = rep.bytes_out;
  d["classes"] = rep.classes;
  py::list shards, skipped;
  for (const ShardInfo& s : rep.shards) shards.append(py::str(s.file));
  for (const auto& [file, reason] : rep.skipped) skipped.append(py::make_tuple(file, reason));
  d["shards"] = shards;
  d["skipped"] = skipped;
  return d;
}

py::dict convert(const std::string& src, const std::string& out, const py::kwargs& kwargs) {
  ConvertOptions o;
  for (const auto& [key, value] : kwargs) {
    const std::string k = key.cast<std::string>();
    const auto& table = convert_kwargs();
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const ConvertKwarg& c) { return k == c.name; });
    if (it == table.end())
      throw py::type_error("convert() got an unexpected keyword argument '" + k + "'");
    it->set(value, &o);
  }
  o.command = "sluice.convert(" + src + ", " + out + ")";
  Result<ConvertReport> r = [&] {
    py::gil_scoped_release release;
    return convert_images(src, out, o);
  }();
  return report_dict(take(std::move(r)));
}

py::dict finish(const std::string& out, const std::string& split, bool verify) {
  FinishOptions o;
  o.split = split;
  o.verify = verify;
  Result<ConvertReport> r = [&] {
    py::gil_scoped_release release;
    return finish_convert(out, o);
  }();
  return report_dict(take(std::move(r)));
}

py::object inspect_paths(const py::object& paths, bool verify) {
  std::vector<std::string> list = py::isinstance<py::str>(paths)
                                      ? std::vector<std::string>{paths.cast<std::string>()}
                                      : paths.cast<std::vector<std::string>>();
  InspectOptions o;
  o.verify = verify;
  Result<InspectReport> r = [&] {
    py::gil_scoped_release release;
    return inspect(list, o);
  }();
  InspectReport rep = take(std::move(r));
  return py::module_::import("json").attr("loads")(format_inspect_json(rep));
}

}  // namespace
}  // namespace sluice::python

namespace sluice::python {
namespace {

void def_batch(py::module_& m) {
  py::class_<PyBatch>(m, "Batch", "One batch of images in a ring slot (see Pipeline).")
      .def("__dlpack__", &to_dlpack, py::arg("stream") = py::none(),
           "A DLPack capsule sharing this batch's memory.")
      .def("__dlpack_device__",
           [](const PyBatch& b) {
             int d = b.batch().device();
             return d < 0 ? py::make_tuple(static_cast<int>(kDLCPU), 0)
                          : py::make_tuple(static_cast<int>(kDLCUDA), d);
           })
      .def("numpy", &to_numpy,
           "A NumPy view of the images (no copy; keeps the batch alive); a host copy for a batch "
           "on a GPU.")
      .def_property_readonly(
          "device",
          [](const PyBatch& b) {
            int d = b.batch().device();
            return d < 0 ? std::string("cpu") : "cuda:" + std::to_string(d);
          },
          "'cpu' or 'cuda:N': where the images are")
      .def("release", &PyBatch::release,
           "Return the memory to the ring now; views must not be used after.")
      .def("__len__", [](const PyBatch& b) { return b.batch().size(); })
      .def_property_readonly("shape",
                             [](const PyBatch& b) { return py::tuple(py::cast(b.shape())); })
      .def_property_readonly("dtype", &PyBatch::dtype)
      .def_property_readonly("labels", &PyBatch::labels, "int64 labels (a copy)")
      .def_property_readonly("sample_ids", &PyBatch::sample_ids,
                             "record ids of the samples (a copy)")
      .def_property_readonly("epoch", [](const PyBatch& b) { return b.batch().epoch(); })
      .def_property_readonly("index", [](const PyBatch& b) { return b.batch().index(); });
}

void def_pipeline(py::module_& m) {
  py::class_<PyPipeline>(m, "Pipeline", pipeline_doc().c_str())
      .def(py::init<const py::object&, const py::kwargs&>(), py::arg("path"))
      .def("__len__", &PyPipeline::len, "Batches per epoch for this rank.")
      .def("__iter__", &PyPipeline::iter, py::return_value_policy::reference_internal)
      .def("__next__", &PyPipeline::next)
      .def("set_epoch", &PyPipeline::set_epoch, py::arg("epoch"),
           "Start `epoch` from its first batch.")
      .def("state_dict", &PyPipeline::state_dict,
           "{'epoch': E, 'batches': B}: where the epoch stands.")
      .def("load_state_dict", &PyPipeline::load_state_dict, py::arg("state"),
           "Continue exactly where a state_dict() left off.")
      .def("stats", &PyPipeline::stats,
           "Per-stage figures, the engine's tuning and the bottleneck verdict.")
      .def_property_readonly("records", &PyPipeline::records)
      .def_property_readonly("classes", &PyPipeline::classes);
}

}  // namespace
}  // namespace sluice::python

PYBIND11_MODULE(_sluice, m) {
  using namespace sluice::python;
  m.doc() = "sluice: keeps GPUs fed. The C++ input pipeline, convert and inspect.";
  m.attr("__version__") = SLUICE_VERSION;  // CMake's project version, its one home
  static py::exception<void> data_error(m, "DataError", PyExc_RuntimeError);
  g_data_error = data_error.ptr();
  m.attr("DataError").attr("__doc__") =
      "Corrupt or truncated data: the message names the file, offset and reason.";
  // pip's NVIDIA wheels (nvJPEG, the CUDA runtime) of this interpreter's
  // environment join the library search, whether or not it is activated.
  {
    std::vector<std::string> sites;
    for (py::handle d : py::module_::import("sys").attr("path")) {
      std::string dir = py::str(d);
      if (dir.ends_with("site-packages") || dir.ends_with("dist-packages")) sites.push_back(dir);
    }
    sluice::detail::add_python_site_dirs(sites);
  }

  def_batch(m);
  def_pipeline(m);

  static const std::string convert_docstring = convert_doc();
  m.def("convert", &convert, py::arg("src"), py::arg("out"), convert_docstring.c_str());
  m.def("finish_convert", &finish, py::arg("out"), py::arg("split") = "train",
        py::arg("verify") = true,
        "finish_convert(out, split='train', verify=True) -> dict\nChecks every part of a "
        "partitioned conversion (convert(..., part=I, parts=N)) and writes dataset.json "
        "(as `sluice convert --finish`).");
  m.def(
      "inspect", &inspect_paths, py::arg("paths"), py::arg("verify") = false,
      "inspect(paths, verify=False) -> dict: what record files hold (as `sluice inspect --json`).");
  std::vector<std::string> names;
  for (const sluice::OptionSpec& s : sluice::pipeline_option_specs()) names.push_back(s.name);
  m.attr("PIPELINE_OPTIONS") = names;
}
