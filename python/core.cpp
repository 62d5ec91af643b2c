// The extension module embed._core: the engine's Model with a pool of Contexts, and its one
// Request type, bound with nanobind. Texts in, numpy arrays out (the engine's row buffer handed to
// numpy, never copied); the GIL is released while the engine runs. Names and defaults that Python
// users see (sentence-transformers' shape) live in embed/__init__.py, not here.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/api.h"
#include "engine/quantize.h"
#include "source/model_source.h"
#include "tokenizer/tokenizer.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace embed::python {
namespace {

// An engine error as the Python exception of its kind (embed/errors.py), with the engine's
// message and the index of the input at fault.
[[noreturn]] void raise_status(const Status& s) {
  nb::object exc = nb::module_::import_("embed.errors").attr("from_engine")(error_kind_name(s.kind), s.message,
                                                                           s.index >= 0 ? nb::object(nb::int_(s.index)) : nb::none());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw nb::python_error();
}

template <class T>
T value_or_raise(Result<T>&& r) {
  if (!r) raise_status(r.error());
  return std::move(r).value();
}

// Any Python sequence of str -> UTF-8 strings, each error naming the text's index. A str that
// cannot be UTF-8 (a lone surrogate, as `errors="surrogateescape"` decoding leaves) is refused
// like the CLI refuses a line that is not UTF-8.
std::vector<std::string> utf8_texts(nb::handle seq, const char* what) {
  nb::object fast = nb::steal(PySequence_Fast(seq.ptr(), "texts must be a sequence of str"));
  if (!fast.is_valid()) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.ptr());
  PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!PyUnicode_Check(items[i]))
      throw nb::type_error((std::string(what) + " " + std::to_string(i) + " is " + Py_TYPE(items[i])->tp_name + ", not str").c_str());
    Py_ssize_t size = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(items[i], &size);
    if (!utf8) {
      const nb::python_error e;  // the UnicodeEncodeError, taken off the error indicator
      raise_status(Status{ErrorKind::InvalidArgument,
                          std::string(what) + " " + std::to_string(i) + " is not valid UTF-8: " + nb::str(e.value()).c_str(), i});
    }
    out.emplace_back(utf8, static_cast<size_t>(size));
  }
  return out;
}

// A vector handed to numpy: the array owns the vector's buffer through a capsule (no copy). View
// (int8 over the engine's code bytes) must be the vector's element size.
template <class T, class View = T>
nb::ndarray<nb::numpy, View> to_numpy(std::vector<T>&& v, std::initializer_list<size_t> shape) {
  static_assert(sizeof(View) == sizeof(T));
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, View>(reinterpret_cast<View*>(owned->data()), shape, owner);
}

// RunSettings whose progress callback, called after each forward pass with the GIL taken, runs
// `progress(done, total)` and lets Ctrl-C through (PyErr_CheckSignals): a Python error stops the
// request, and run() re-raises it once the engine has returned.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted from Python"; }
};

RunSettings run_settings(int64_t batch_inputs, int64_t batch_tokens, nb::object progress) {
  RunSettings s;
  s.batch_inputs = batch_inputs;
  s.batch_tokens = batch_tokens;
  if (!progress.is_none())
    s.progress = [progress](size_t done, size_t total) {
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) throw Interrupted();
      try {
        progress(done, total);
      } catch (nb::python_error& e) {
        e.restore();
        throw Interrupted();
      }
    };
  return s;
}

// A loaded model and the Contexts that calls borrow: each call (from any Python thread) takes an
// idle Context or makes one, so concurrent calls never share one, and a thread's next call
// reuses a warm one. The pool grows to the largest number of concurrent calls seen.
class PyModel {
 public:
  PyModel(const std::string& path, int threads, const std::string& device, const std::string& compute_type, bool cache_gguf,
          const std::string& convert_type)
      : threads_(threads) {
    ModelOptions o;
    o.threads = threads;
    if (device == "cpu") {
      o.device = Device::Cpu;
    } else if (device.rfind("cuda", 0) == 0 && (device.size() == 4 || (device[4] == ':' && device.size() > 5 &&
                                                                         device.find_first_not_of("0123456789", 5) == std::string::npos))) {
      o.device = Device::Cuda;
      o.cuda_device = device.size() == 4 ? 0 : std::stoi(device.substr(5));
    } else {
      raise_status(Status{ErrorKind::InvalidArgument, "device '" + device + "' is not one of cpu, cuda, cuda:N"});
    }
    if (compute_type == "bf16") o.compute_type = ComputeType::BF16;
    else if (compute_type == "int8") o.compute_type = ComputeType::Int8;
    else if (compute_type != "f32")
      raise_status(Status{ErrorKind::InvalidArgument, "compute_type '" + compute_type + "' is not one of f32, bf16, int8"});
    SourceOptions so;
    so.cache_gguf = cache_gguf;
    so.convert_type = convert_type;
    Result<std::shared_ptr<const Model>> loaded = Status{};
    {
      nb::gil_scoped_release nogil;  // a Hub name may download
      loaded = open_model(path, o, so);
    }
    model_ = value_or_raise(std::move(loaded));
  }

  // Rows of `texts` and the engine's warnings: a float32 [rows, cols] array, or with a quantized
  // Request::precision the codes as int8 / uint8 [rows, code bytes]. int8 / uint8 without ranges
  // take them from these very rows (what sentence-transformers' encode does with no calibration).
  nb::tuple embed(nb::handle texts, const Request& r, int64_t batch_inputs, int64_t batch_tokens, nb::object progress) {
    const std::vector<std::string> in = utf8_texts(texts, "text");
    const RunSettings s = run_settings(batch_inputs, batch_tokens, progress);
    const bool self_calibrated = (r.precision == Precision::Int8 || r.precision == Precision::Uint8) && !r.ranges;
    Request run = r;
    if (self_calibrated) run.precision = Precision::Float32;
    Embeddings e = finish(call_released<Embeddings>([&](Context& ctx) { return ctx.embed(in, run, s); }));
    if (self_calibrated && e.rows == 1)
      raise_status(Status{ErrorKind::InvalidArgument, std::string("cannot compute ") + precision_name(r.precision) +
                                                          " ranges from a single text: pass ranges (an embed calibrate file or a (2, dim) array)"});
    if (self_calibrated && e.rows > 1 && e.rows < 100)
      e.warnings.push_back(std::string(precision_name(r.precision)) + " ranges computed from only " + std::to_string(e.rows) +
                           " texts; ranges from a representative sample (embed calibrate) are more stable");
    if (self_calibrated && e.rows > 1) {
      nb::gil_scoped_release nogil;
      const QuantizationRanges ranges = ranges_from_rows(e.data.data(), e.rows, e.cols);
      e.precision = r.precision;
      e.code_bytes = code_bytes(r.precision, e.cols);
      e.codes.resize(static_cast<size_t>(e.rows * e.code_bytes));
      quantize_rows(e.data.data(), e.rows, e.cols, r.precision, &ranges, e.codes.data());
      std::vector<float>().swap(e.data);
    }
    std::vector<std::string> warnings = std::move(e.warnings);
    const size_t rows = static_cast<size_t>(e.rows);
    if (r.precision == Precision::Float32)
      return nb::make_tuple(to_numpy(std::move(e.data), {rows, static_cast<size_t>(e.cols)}), warnings);
    const size_t width = static_cast<size_t>(code_bytes(r.precision, e.cols));
    if (precision_signed(r.precision)) return nb::make_tuple(to_numpy<uint8_t, int8_t>(std::move(e.codes), {rows, width}), warnings);
    return nb::make_tuple(to_numpy(std::move(e.codes), {rows, width}), warnings);
  }

  // Scores of (query, document) pairs, in document order.
  nb::ndarray<nb::numpy, float> rerank(const std::string& query, nb::handle documents, const Request& r, int64_t batch_inputs,
                                       int64_t batch_tokens, nb::object progress) {
    const std::vector<std::string> docs = utf8_texts(documents, "document");
    const RunSettings s = run_settings(batch_inputs, batch_tokens, progress);
    std::vector<float> scores = finish(call_released<std::vector<float>>([&](Context& ctx) { return ctx.rerank(query, docs, r, s); }));
    const size_t n = scores.size();
    return to_numpy(std::move(scores), {n});
  }

  // BGE-M3's read-outs of one pass (Context::encode) in FlagEmbedding's shapes: the dense rows as a
  // float32 [n, dim] array (None unless asked), lexical weights as {str(token id): weight} per text,
  // ColBERT vectors as a float32 [tokens - 1, dim] array per text; and the engine's warnings.
  nb::tuple encode_outputs(nb::handle texts, const Request& r, bool dense, bool sparse, bool colbert, int64_t batch_inputs, int64_t batch_tokens,
                           nb::object progress) {
    const std::vector<std::string> in = utf8_texts(texts, "text");
    const RunSettings s = run_settings(batch_inputs, batch_tokens, progress);
    MultiOutput m = finish(call_released<MultiOutput>([&](Context& ctx) { return ctx.encode(in, Outputs{dense, sparse, colbert}, r, s); }));
    nb::object dense_vecs = nb::none();
    if (dense) {
      const size_t rows = static_cast<size_t>(m.dense.rows), cols = static_cast<size_t>(m.dense.cols);
      dense_vecs = nb::cast(to_numpy(std::move(m.dense.data), {rows, cols}));
    }
    nb::object lexical = nb::none(), colbert_vecs = nb::none();
    if (sparse) {
      nb::list l;
      char key[16];
      for (const SparseRow& row : m.sparse) {
        nb::dict w;
        for (size_t k = 0; k < row.ids.size(); k++) {
          std::snprintf(key, sizeof key, "%d", row.ids[k]);
          w[key] = row.weights[k];
        }
        l.append(w);
      }
      lexical = l;
    }
    if (colbert) {
      nb::list l;
      for (MultiVectorRow& row : m.colbert) {
        const size_t rows = static_cast<size_t>(row.rows), cols = static_cast<size_t>(row.cols);
        l.append(nb::cast(to_numpy(std::move(row.data), {rows, cols})));
      }
      colbert_vecs = l;
    }
    return nb::make_tuple(dense_vecs, lexical, colbert_vecs, m.dense.warnings);
  }

  // FlagEmbedding's compute_score of documents against a query (Context::score_readouts): the five
  // scores as float64 arrays keyed as compute_score keys them.
  nb::dict score_readouts(const std::string& query, nb::handle documents, std::array<double, 3> weights, const Request& r,
                          int64_t batch_inputs, int64_t batch_tokens, nb::object progress) {
    const std::vector<std::string> docs = utf8_texts(documents, "document");
    const RunSettings s = run_settings(batch_inputs, batch_tokens, progress);
    std::vector<M3Scores> all =
        finish(call_released<std::vector<M3Scores>>([&](Context& ctx) { return ctx.score_readouts(query, docs, weights, r, s); }));
    nb::dict out;
    const std::pair<const char*, double M3Scores::*> keys[] = {{"dense", &M3Scores::dense},
                                                               {"sparse", &M3Scores::sparse},
                                                               {"colbert", &M3Scores::colbert},
                                                               {"sparse+dense", &M3Scores::sparse_dense},
                                                               {"colbert+sparse+dense", &M3Scores::colbert_sparse_dense}};
    for (const auto& [name, member] : keys) {
      std::vector<double> v;
      for (const M3Scores& x : all) v.push_back(x.*member);
      const size_t n = v.size();
      out[name] = to_numpy(std::move(v), {n});
    }
    return out;
  }

  // Token ids of each text as the model's tokenizer gives them (no prompt): what `embed tokenize`
  // prints, add_special false as its --no-special, split_special as its --split-special.
  std::vector<std::vector<int32_t>> tokenize(nb::handle texts, bool add_special, bool split_special) {
    const std::vector<std::string> in = utf8_texts(texts, "text");
    if (!model_->has_tokenizer()) raise_status(Status{ErrorKind::Unsupported, model_->describe().path + " has no tokenizer metadata"});
    tok::EncodeOptions eo;
    eo.add_special = add_special;
    eo.split_special = split_special;
    std::vector<std::vector<int32_t>> ids(in.size());
    nb::gil_scoped_release nogil;
    for (size_t i = 0; i < in.size(); i++) ids[i] = model_->tokenizer().encode(in[i], eo).ids;
    return ids;
  }

  nb::dict describe() const {
    const ModelDescription& d = model_->describe();
    nb::dict prompts;
    for (const auto& [name, text] : d.prompts.texts) prompts[name.c_str()] = text;
    nb::dict out;
    out["path"] = d.path;
    out["architecture"] = d.arch;
    out["dim"] = d.embedding_dim;
    out["context"] = d.n_ctx;
    out["pooling"] = pooling_name(d.default_pooling);
    out["tokenizer"] = d.tokenizer;
    out["d_model"] = d.d_model;
    out["n_layers"] = d.n_layers;
    out["n_vocab"] = d.n_vocab;
    out["causal"] = d.causal;
    out["rank_outputs"] = d.n_cls_out;
    out["rerank_template"] = d.has_rerank_template;
    out["prompts"] = prompts;
    out["default_prompt_name"] = d.prompts.default_name.empty() ? nb::none() : nb::object(nb::str(d.prompts.default_name.c_str()));
    out["kernels"] = d.kernels;
    out["sparse_head"] = d.sparse_head;
    out["colbert_dim"] = d.colbert_dim;
    out["threads"] = threads_;
    return out;
  }

 private:
  // Runs `call` on a borrowed Context with the GIL released; an engine error while making the
  // Context comes back as a Status like the call's own.
  template <class T, class F>
  Result<T> call_released(F&& call) {
    nb::gil_scoped_release nogil;
    try {
      Lease ctx(*this);
      return call(*ctx);
    } catch (const Error& e) {
      return Status{e.kind(), e.what()};
    } catch (const std::bad_alloc&) {
      return Status{ErrorKind::OutOfMemory, "out of memory"};
    }
  }

  // The value of a call, or its error raised: a Python error from the progress callback (Ctrl-C)
  // first, since the engine's Status then only says it was interrupted.
  template <class T>
  static T finish(Result<T>&& r) {
    if (PyErr_Occurred()) throw nb::python_error();
    return value_or_raise(std::move(r));
  }

  // A Context borrowed from the pool for one call (taken and returned without the GIL).
  class Lease {
   public:
    explicit Lease(PyModel& m) : m_(m) {
      {
        std::lock_guard<std::mutex> lock(m_.mu_);
        if (!m_.idle_.empty()) {
          ctx_ = std::move(m_.idle_.back());
          m_.idle_.pop_back();
        }
      }
      if (!ctx_) ctx_ = std::make_unique<Context>(m_.model_, m_.threads_);
    }
    ~Lease() {
      std::lock_guard<std::mutex> lock(m_.mu_);
      m_.idle_.push_back(std::move(ctx_));
    }
    Context& operator*() { return *ctx_; }

   private:
    PyModel& m_;
    std::unique_ptr<Context> ctx_;
  };

  std::shared_ptr<const Model> model_;
  int threads_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Context>> idle_;
};

// Request fields that are enums in C++ are strings in Python, spelled as the CLI spells them.
void bind_request(nb::module_& m) {
  nb::class_<Request>(m, "Request", "What to compute (engine/request.h): one type for embed and rerank.")
      .def(nb::init<>())
      .def_rw("normalize", &Request::normalize)
      .def_rw("dimensions", &Request::dimensions)
      .def_rw("max_tokens", &Request::max_tokens)
      .def_rw("truncate", &Request::truncate)
      .def_rw("prompt", &Request::prompt)
      .def_rw("prompt_name", &Request::prompt_name)
      .def_rw("exclude_special", &Request::exclude_special)
      .def_rw("prompt_template", &Request::prompt_template)
      .def_rw("kv_embedding", &Request::kv_embedding)
      .def_rw("kv_layers", &Request::kv_layers)
      .def_rw("kv_bias", &Request::kv_bias)
      .def_rw("split_special", &Request::split_special)
      .def_prop_rw(
          "pooling", [](const Request& r) -> std::optional<std::string> { return r.pooling ? std::optional<std::string>(pooling_name(*r.pooling)) : std::nullopt; },
          [](Request& r, std::optional<std::string> s) {
            if (!s) return r.pooling.reset();
            Pooling p;
            if (!parse_pooling(*s, &p)) raise_status(Status{ErrorKind::InvalidArgument, "pooling '" + *s + "' is not one of none, mean, cls, last, rank, hybrid"});
            r.pooling = p;
          })
      .def_prop_rw(
          "precision", [](const Request& r) { return precision_name(r.precision); },
          [](Request& r, const std::string& s) {
            if (!parse_precision(s, &r.precision))
              raise_status(Status{ErrorKind::InvalidArgument, "precision '" + s + "' is not one of float32, int8, uint8, binary, ubinary"});
          })
      // int8 / uint8 ranges: an `embed calibrate` file, or per-dimension min and max.
      .def("load_ranges", [](Request& r, const std::string& path) {
            try {
              r.ranges = std::make_shared<QuantizationRanges>(load_ranges(path));
            } catch (const Error& e) {
              raise_status(Status{e.kind(), e.what()});
            }
          }, "path"_a)
      .def("set_ranges", [](Request& r, std::vector<float> min, std::vector<float> max) {
            if (min.empty() || min.size() != max.size())
              raise_status(Status{ErrorKind::InvalidArgument, "ranges need one min and one max per dimension (got " +
                                                                 std::to_string(min.size()) + " and " + std::to_string(max.size()) + ")"});
            auto q = std::make_shared<QuantizationRanges>();
            q->min = std::move(min), q->max = std::move(max);
            r.ranges = std::move(q);
          }, "min"_a, "max"_a)
      .def_prop_ro("has_ranges", [](const Request& r) { return r.ranges != nullptr; })
      .def_prop_rw(
          "truncation_direction", [](const Request& r) { return r.truncation_direction == TruncationDirection::Right ? "right" : "left"; },
          [](Request& r, const std::string& s) {
            if (!parse_truncation_direction(s, &r.truncation_direction))
              raise_status(Status{ErrorKind::InvalidArgument, "truncation_direction '" + s + "' is not one of right, left"});
          });
}

}  // namespace
}  // namespace embed::python

NB_MODULE(_core, m) {
  using embed::python::PyModel;
  m.attr("__version__") = EMBED_VERSION;
  embed::python::bind_request(m);
  nb::class_<PyModel>(m, "Model")
      .def(nb::init<const std::string&, int, const std::string&, const std::string&, bool, const std::string&>(), "path"_a, "threads"_a,
           "device"_a, "compute_type"_a, "cache_gguf"_a, "convert_type"_a)
      .def("embed", &PyModel::embed, "texts"_a, "request"_a, "batch_inputs"_a, "batch_tokens"_a, "progress"_a.none())
      .def("rerank", &PyModel::rerank, "query"_a, "documents"_a, "request"_a, "batch_inputs"_a, "batch_tokens"_a, "progress"_a.none())
      .def("tokenize", &PyModel::tokenize, "texts"_a, "add_special"_a, "split_special"_a)
      .def("encode_outputs", &PyModel::encode_outputs, "texts"_a, "request"_a, "dense"_a, "sparse"_a, "colbert"_a, "batch_inputs"_a,
           "batch_tokens"_a, "progress"_a.none())
      .def("score_readouts", &PyModel::score_readouts, "query"_a, "documents"_a, "weights"_a, "request"_a, "batch_inputs"_a,
           "batch_tokens"_a, "progress"_a.none())
      .def("describe", &PyModel::describe);
}
