// rayorch_cpp._core: the C++ engine's bindings for Python values and Python UDFs.
//
// Values are Python objects held by reference in blocks (no copies, no pickling). Every place
// that touches a Python object takes the GIL itself: UDF invocations and constructors on the
// actor threads, group building for reduce, block destruction (which may happen on the
// driver thread while no Python code runs), and the delivery of finished rows. run() releases
// the GIL for the whole run, so UDFs that release it (sleep, I/O, native code) overlap.
//
// The pure-Python package (python/rayorch_cpp) records pipelines through Trace, compiles them
// into Program and runs them on a Core (the local executor or the deterministic sync core).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cpp_udfs.h"
#include "py_values.h"
#include "ray_pools.h"
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "rayorch/codec.h"
#include "rayorch/errors.h"
#include "rayorch/executor.h"
#include "rayorch/metrics.h"
#include "rayorch/module_options.h"
#include "rayorch/outcome.h"
#include "rayorch/program.h"
#include "rayorch/recovery.h"

#include "execution/driver.h"

#if RAYORCH_PYTHON_PDF2MD
#include "pdf2md/codec.h"
#include "pdf2md/pdf2md.h"
#include "pdf2md/samples.h"
#endif

#if RAYORCH_PYTHON_VIDEO
#include "video/codec.h"
#include "video/record_json.h"
#include "video/samples.h"
#include "video/video.h"
#endif

namespace nb = nanobind;
namespace rd = rayorch::detail;

namespace {

using namespace rayorch::python;  // NOLINT(google-build-using-namespace): the extension's own

rd::ListOps python_list_ops() {
  rd::ListOps ops;
  ops.size = [](const void* list) { return static_cast<const PyValue*>(list)->child_count; };
  ops.at = [](const void* list, std::size_t i) -> const void* {
    return &static_cast<const PyValue*>(list)->children[i];
  };
  return ops;
}

/// reduce: the members' values, in ordinal order, as one Python list.
rd::BlockRef make_group(std::vector<const void*> members, std::shared_ptr<const void> /*keep*/,
                        const void** group) {
  auto block = std::make_shared<PyBlock>();
  Gil gil;
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(members.size()));
  if (list == nullptr) throw_foreign();
  for (std::size_t i = 0; i < members.size(); ++i) {
    PyObject* o = object_at(members[i]);
    Py_INCREF(o);
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), o);
  }
  block->rows.push_back(PyValue{false, list, nullptr, 0});
  *group = &block->rows[0];
  return block;
}

// ---------------------------------------------------------------------------------------
// UDFs
// ---------------------------------------------------------------------------------------

/// What a Module's actors are built from: the UDF (a class or a callable) and its
/// constructor arguments, replayed on every actor.
struct ModuleSpec {
  Ref udf;
  Ref args;    ///< tuple
  Ref kwargs;  ///< dict or null
};

/// One Python UDF instance owned by an actor, with its bound `run` (or the callable).
class PyUdf final : public rd::UdfInstance {
 public:
  PyUdf(Ref instance, Ref run) : instance_(std::move(instance)), run_(std::move(run)) {}
  PyObject* run() const { return run_.get(); }

 private:
  Ref instance_;
  Ref run_;
};

std::unique_ptr<rd::UdfInstance> build_udf(const ModuleSpec& spec) {
  Gil gil;
  PyObject* udf = spec.udf.get();
  PyObject* instance = nullptr;
  if (PyType_Check(udf)) {
    instance = PyObject_Call(udf, spec.args.get(), spec.kwargs.get());
    if (instance == nullptr) throw_foreign();
  } else {
    instance = Py_NewRef(udf);
  }
  Ref owned = Ref::steal(instance);
  PyObject* run = PyObject_GetAttrString(instance, "run");
  if (run == nullptr) {
    PyErr_Clear();
    if (PyCallable_Check(instance) == 0) {
      throw rd::ForeignError("TypeError", "the UDF " + type_name_of(instance) +
                                              " has no run() method and is not callable");
    }
    run = Py_NewRef(instance);
  }
  return std::make_unique<PyUdf>(std::move(owned), Ref::steal(run));
}

/// What one Call's invoker needs; the expanded and mask flags are set while tracing.
struct CallInfo {
  std::size_t positional = 0;      ///< leading Port inputs passed positionally
  std::vector<Ref> keyword_names;  ///< then Port inputs passed by keyword (str)
  Ref static_kwargs;               ///< dict or null
  std::size_t outputs = 1;
  std::vector<char> expanded;  ///< per output: F.expand reads it
  std::vector<char> mask;      ///< per output: F.filter reads it as a mask
};

/// Checks the UDF's result and turns it into blocks. Returns a contract error message or "".
std::string convert_output(const CallInfo& info, PyObject* result, std::size_t rows,
                           rd::RpcOutput& out) {
  // The output columns.
  std::vector<PyObject*> columns;
  if (info.outputs == 1) {
    columns.push_back(result);
  } else {
    if (!PyList_Check(result) && !PyTuple_Check(result)) {
      return fmt::format(
          "the UDF declares {} outputs, so it must return a tuple or list of {} "
          "columns; it returned {}",
          info.outputs, info.outputs, type_name_of(result));
    }
    const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(result));
    if (n != info.outputs) {
      return fmt::format("{} outputs for {} declared", n, info.outputs);
    }
    for (std::size_t k = 0; k < n; ++k)
      columns.push_back(PySequence_Fast_GET_ITEM(result, static_cast<Py_ssize_t>(k)));
  }
  for (std::size_t k = 0; k < columns.size(); ++k) {
    PyObject* c = columns[k];
    if (!PyList_Check(c) && !PyTuple_Check(c)) {
      return fmt::format(
          "output {} must be a list or tuple with one element per input row; "
          "the UDF returned {}",
          k, type_name_of(c));
    }
    const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(c));
    if (n != rows) return fmt::format("output {} has {} rows for {} input rows", k, n, rows);
  }
  // Typed failures: a GroupFailure in any output wins over a RecordFailure.
  std::vector<rd::RowKind> kinds;
  std::vector<std::string> messages;
  auto failure_kind = [](PyObject* v) {
    if (registry.group_failure &&
        PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(registry.group_failure)))
      return rd::RowKind::group_failure;
    if (registry.record_failure &&
        PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(registry.record_failure)))
      return rd::RowKind::record_failure;
    return rd::RowKind::ok;
  };
  for (PyObject* c : columns) {
    PyObject** items = PySequence_Fast_ITEMS(c);
    for (std::size_t r = 0; r < rows; ++r) {
      const rd::RowKind k = failure_kind(items[r]);
      if (k == rd::RowKind::ok) continue;
      if (kinds.empty()) {
        kinds.assign(rows, rd::RowKind::ok);
        messages.assign(rows, std::string());
      }
      if (kinds[r] == rd::RowKind::ok ||
          (k == rd::RowKind::group_failure && kinds[r] == rd::RowKind::record_failure)) {
        kinds[r] = k;
        PyObject* cause = PyObject_GetAttrString(items[r], "cause");
        if (cause == nullptr) {
          PyErr_Clear();
          messages[r] = str_of(items[r]);
        } else {
          messages[r] = str_of(cause);
          Py_DECREF(cause);
        }
      }
    }
  }
  auto failed = [&](std::size_t r) { return !kinds.empty() && kinds[r] != rd::RowKind::ok; };
  // Contracts of expanded and mask outputs, checked before anything is kept.
  for (std::size_t k = 0; k < columns.size(); ++k) {
    PyObject** items = PySequence_Fast_ITEMS(columns[k]);
    for (std::size_t r = 0; r < rows; ++r) {
      if (failed(r)) continue;
      if (info.expanded[k] && !PyList_Check(items[r]) && !PyTuple_Check(items[r])) {
        return fmt::format(
            "output {} is expanded (F.expand), so each row must be a list or "
            "tuple; row {} is {}",
            k, r, type_name_of(items[r]));
      }
      if (info.mask[k] && !PyBool_Check(items[r])) {
        return fmt::format(
            "output {} is an F.filter mask, so each row must be a bool; row {} "
            "is {}",
            k, r, type_name_of(items[r]));
      }
    }
  }
  for (std::size_t k = 0; k < columns.size(); ++k) {
    PyObject** items = PySequence_Fast_ITEMS(columns[k]);
    auto block = std::make_shared<PyBlock>();
    block->rows.resize(rows);
    if (info.expanded[k]) {
      std::size_t total = 0;
      for (std::size_t r = 0; r < rows; ++r)
        if (!failed(r)) total += static_cast<std::size_t>(PySequence_Fast_GET_SIZE(items[r]));
      block->children.resize(total);
    }
    std::vector<const void*> values(rows, nullptr);
    std::size_t next_child = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      if (failed(r)) continue;
      PyObject* v = items[r];
      PyValue& pv = block->rows[r];
      pv.obj = Py_NewRef(v);
      pv.truth = v == Py_True;
      if (info.expanded[k]) {
        const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(v));
        PyObject** elements = PySequence_Fast_ITEMS(v);
        pv.children = block->children.data() + next_child;
        pv.child_count = n;
        for (std::size_t i = 0; i < n; ++i) {
          PyValue& child = block->children[next_child++];
          child.obj = Py_NewRef(elements[i]);
          child.truth = elements[i] == Py_True;
        }
      }
      values[r] = &pv;
    }
    out.blocks.push_back(std::move(block));
    out.values.push_back(std::move(values));
  }
  for (std::size_t r = 0; r < kinds.size(); ++r) {
    if (kinds[r] != rd::RowKind::ok) {
      out.failures.push_back(
          rd::RowFailure{static_cast<std::uint32_t>(r), kinds[r], std::move(messages[r])});
    }
  }
  return {};
}

rd::RpcOutput invoke_udf(const CallInfo& info, rd::UdfInstance& instance,
                         std::span<const rd::ColumnInput> in) {
  const PyUdf& udf = static_cast<const PyUdf&>(instance);
  const std::size_t rows = in.empty() ? 0 : in[0].size;
  Gil gil;
  auto column = [&](const rd::ColumnInput& c) {
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(c.size));
    if (list == nullptr) throw_foreign();
    for (std::size_t r = 0; r < c.size; ++r) {
      PyObject* o = object_at(c.data[r]);
      Py_INCREF(o);
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(r), o);
    }
    return list;
  };
  Ref args = Ref::steal(PyTuple_New(static_cast<Py_ssize_t>(info.positional)));
  if (!args) throw_foreign();
  for (std::size_t i = 0; i < info.positional; ++i)
    PyTuple_SET_ITEM(args.get(), static_cast<Py_ssize_t>(i), column(in[i]));
  Ref kwargs;
  if (info.static_kwargs || !info.keyword_names.empty()) {
    kwargs = Ref::steal(info.static_kwargs ? PyDict_Copy(info.static_kwargs.get()) : PyDict_New());
    if (!kwargs) throw_foreign();
    for (std::size_t j = 0; j < info.keyword_names.size(); ++j) {
      PyObject* col = column(in[info.positional + j]);
      const int rc = PyDict_SetItem(kwargs.get(), info.keyword_names[j].get(), col);
      Py_DECREF(col);
      if (rc != 0) throw_foreign();
    }
  }
  PyObject* result = PyObject_Call(udf.run(), args.get(), kwargs.get());
  if (result == nullptr) throw_foreign();
  Ref owned = Ref::steal(result);
  rd::RpcOutput out;
  out.contract_error = convert_output(info, result, rows, out);
  if (!out.contract_error.empty()) {
    out.blocks.clear();
    out.values.clear();
    out.failures.clear();
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// C++ UDFs in Python pipelines
// ---------------------------------------------------------------------------------------
//
// A C++ UDF's Call keeps Python values in its blocks like any other Call: its inputs are
// converted to the C++ types of its run() under the GIL, run() runs without the GIL, and its
// results are converted back to Python objects (ro::Row failures become RecordFailure /
// GroupFailure) and checked like a Python UDF's.

/// The C++ values of one input column of a C++ UDF, and the Column view over them.
template <class T>
struct CppColumn {
  std::vector<T> values;
  std::vector<const void*> pointers;
  void load(const rd::ColumnInput& c) {
    values.reserve(c.size);
    for (std::size_t r = 0; r < c.size; ++r)
      values.push_back(nb::cast<T>(nb::handle(object_at(c.data[r]))));
    for (const T& v : values) pointers.push_back(&v);
  }
  rayorch::Column<T> column() const { return rayorch::Column<T>(pointers.data(), pointers.size()); }
};

template <class E>
struct CppColumn<rayorch::Group<E>> {
  std::vector<rayorch::Group<E>> values;
  std::vector<const void*> pointers;
  void load(const rd::ColumnInput& c) {
    values.reserve(c.size);
    for (std::size_t r = 0; r < c.size; ++r) {
      auto storage = std::make_shared<std::vector<E>>(
          nb::cast<std::vector<E>>(nb::handle(object_at(c.data[r]))));
      std::vector<const void*> members;
      for (const E& e : *storage) members.push_back(&e);
      values.emplace_back(std::move(members), std::move(storage));
    }
    for (const auto& v : values) pointers.push_back(&v);
  }
  rayorch::Column<rayorch::Group<E>> column() const {
    return rayorch::Column<rayorch::Group<E>>(pointers.data(), pointers.size());
  }
};

template <class T>
PyObject* to_python(const T& value) {
  return nb::cast(value).release().ptr();
}

template <class E>
PyObject* to_python(const rayorch::Row<E>& row) {
  if (row.ok()) return to_python(row.value());
  PyObject* cls = row.is_group_failure() ? registry.group_failure : registry.record_failure;
  return PyObject_CallFunction(cls, "s#", row.message().data(),
                               static_cast<Py_ssize_t>(row.message().size()));
}

template <class E>
PyObject* column_to_python(const std::vector<E>& column) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(column.size()));
  if (list == nullptr) return nullptr;
  for (std::size_t i = 0; i < column.size(); ++i) {
    PyObject* v = to_python(column[i]);
    if (v == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), v);
  }
  return list;
}

template <class E>
PyObject* result_to_python(const std::vector<E>& result) {
  return column_to_python(result);
}

template <class... E>
PyObject* result_to_python(const std::tuple<std::vector<E>...>& result) {
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(sizeof...(E)));
  if (tuple == nullptr) return nullptr;
  bool ok = true;
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((ok = ok &&
           [&] {
             PyObject* c = column_to_python(std::get<K>(result));
             if (c == nullptr) return false;
             PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(K), c);
             return true;
           }()),
     ...);
  }
  (std::index_sequence_for<E...>{});
  if (!ok) {
    Py_DECREF(tuple);
    return nullptr;
  }
  return tuple;
}

template <class U, std::size_t... I>
rd::RpcOutput invoke_cpp(const CallInfo& info, const std::string& name, U& udf,
                         std::span<const rd::ColumnInput> in, std::index_sequence<I...>) {
  using columns = typename rd::UdfTraits<U>::columns;
  const std::size_t rows = in.empty() ? 0 : in[0].size;
  std::tuple<CppColumn<typename rd::ColumnOf<std::tuple_element_t<I, columns>>::type>...> converted;
  {
    Gil gil;
    std::size_t at = 0;
    try {
      ((at = I, std::get<I>(converted).load(in[I])), ...);
    } catch (const nb::cast_error&) {
      throw rd::ForeignError(
          "TypeError", fmt::format("CppModule({}): input {} does not convert to the C++ type of "
                                   "its run() parameter",
                                   name, at));
    } catch (const nb::python_error& e) {
      throw rd::ForeignError("TypeError",
                             fmt::format("CppModule({}): input {}: {}", name, at, e.what()));
    }
  }
  auto result = udf.run(std::get<I>(converted).column()...);  // without the GIL
  Gil gil;
  PyObject* py = result_to_python(result);
  if (py == nullptr) throw_foreign();
  Ref owned = Ref::steal(py);
  rd::RpcOutput out;
  out.contract_error = convert_output(info, py, rows, out);
  if (!out.contract_error.empty()) {
    out.blocks.clear();
    out.values.clear();
    out.failures.clear();
  }
  return out;
}

/// A C++ UDF registered for Python pipelines.
struct CppUdf {
  std::string doc;
  std::size_t inputs = 0;
  std::size_t outputs = 0;
  std::string signature;  ///< constructor argument types, for messages
  std::function<rd::Factory(nb::handle args)> factory;
  std::function<rd::Invoker(std::shared_ptr<CallInfo>, std::string)> invoker;
};

template <class U, class... Ctor>
CppUdf register_cpp(std::string doc, std::string signature) {
  using traits = rd::UdfTraits<U>;
  static_assert(std::tuple_size_v<typename traits::statics> == 0,
                "C++ UDFs for Python take no static arguments");
  CppUdf e;
  e.doc = std::move(doc);
  e.inputs = traits::column_count;
  e.outputs = traits::shape::outputs;
  e.signature = std::move(signature);
  e.factory = [](nb::handle args) -> rd::Factory {
    auto captured =
        std::make_shared<const std::tuple<Ctor...>>(nb::cast<std::tuple<Ctor...>>(args));
    return [captured]() {
      return std::apply(
          [](const Ctor&... a) -> std::unique_ptr<rd::UdfInstance> {
            return std::make_unique<rd::UdfBox<U>>(a...);
          },
          *captured);
    };
  };
  e.invoker = [](std::shared_ptr<CallInfo> info, std::string name) -> rd::Invoker {
    return [info, name](rd::UdfInstance& instance, std::span<const rd::ColumnInput> in) {
      U& udf = static_cast<rd::UdfBox<U>&>(instance).udf;
      return invoke_cpp(*info, name, udf, in, std::make_index_sequence<traits::column_count>{});
    };
  };
  return e;
}

#if RAYORCH_PYTHON_VIDEO
/// video::SampleFrames with its sampling configuration as two constructor arguments.
struct VideoSampleFrames : video::SampleFrames {
  VideoSampleFrames(int every, int per_scene)
      : video::SampleFrames(video::SamplingConfig{.every = every, .per_scene = per_scene}) {}
};
#endif

const std::map<std::string, CppUdf>& cpp_udfs() {
  namespace u = rayorch::python_udfs;
  static const std::map<std::string, CppUdf> udfs = {
    {"Upper", register_cpp<u::Upper>("str -> the string upper-cased", "()")},
    {"SumNonEmpty",
     register_cpp<u::SumNonEmpty>(
         "list[int] (a reduced group) -> its sum; an empty group is a RecordFailure", "()")},
    {"SimRender",
     register_cpp<u::SimRender, double>(
         "(doc, pages) -> [(doc, 0), ..., (doc, pages-1)]; sleeps per_page_ms per page",
         "(per_page_ms: float)")},
    {"SimOcr", register_cpp<u::SimOcr, double, double>(
                   "(doc, page) -> doc * 10**6 + page; sleeps per_batch_ms + per_page_ms per page",
                   "(per_batch_ms: float, per_page_ms: float)")},
    {"SimAssemble",
     register_cpp<u::SimAssemble, double, double>(
         "(page values: list[int], (doc, pages)) -> (doc, page values); sleeps per_doc_ms + "
         "per_page_ms per page",
         "(per_doc_ms: float, per_page_ms: float)")},
#if RAYORCH_PYTHON_PDF2MD
    {"Pdf2mdOpen",
     register_cpp<pdf2md::OpenPdf>(
         "PDF path -> (list[PageRef], DocumentInfo); an unreadable PDF is a RecordFailure", "()")},
    {"Pdf2mdRender", register_cpp<pdf2md::RenderPage, int>(
                         "(PDF path, PageRef) -> PageImage (grayscale) at `dpi`; a page that "
                         "cannot be rendered is a GroupFailure of its document",
                         "(dpi: int)")},
    {"Pdf2mdOcr",
     register_cpp<pdf2md::OcrPage, std::string, std::string>(
         "PageImage -> its text (Tesseract, one engine per actor)", "(lang: str, tessdata: str)")},
    {"Pdf2mdAssemble",
     register_cpp<pdf2md::Assemble>(
         "(page texts: list[str], DocumentInfo) -> Markdown (a heading per page)", "()")},
#endif
#if RAYORCH_PYTHON_VIDEO
    {"VideoOpen", register_cpp<video::OpenVideo>(
                      "video path -> VideoInfo; an unreadable video is a RecordFailure", "()")},
    {"VideoDetectScenes",
     register_cpp<video::DetectScenes, double, int>(
         "VideoInfo -> list[Scene] in order (cuts where the mean absolute gray difference of "
         "consecutive frames exceeds `threshold`)",
         "(threshold: float, analysis_width: int)")},
    {"VideoSampleFrames",
     register_cpp<VideoSampleFrames, int, int>(
         "Scene -> list[FrameRef] (every Nth frame, or K per scene: exactly one positive)",
         "(every: int, per_scene: int)")},
    {"VideoDecodeFrame", register_cpp<video::DecodeFrame, int>(
                             "(video path, FrameRef) -> FrameImage (gray, at most `max_width` "
                             "wide); one cached decoder per actor",
                             "(max_width: int)")},
    {"VideoOcrFrame",
     register_cpp<video::OcrFrame, std::string, std::string>(
         "FrameImage -> its text (Tesseract, one engine per actor)", "(lang: str, tessdata: str)")},
    {"VideoFrameSignature",
     register_cpp<video::FrameSignature>("FrameImage -> its 64-bit difference hash", "()")},
    {"VideoSummarizeScene",
     register_cpp<video::SummarizeScene, int>(
         "(texts: list[str], signatures: list[int], frames: list[FrameRef], Scene) -> "
         "SceneRecord",
         "(near_duplicate_bits: int)")},
    {"VideoAssemble", register_cpp<video::AssembleVideo>(
                          "(scenes: list[SceneRecord], VideoInfo) -> VideoRecord", "()")},
#endif
  };
  return udfs;
}

// ---------------------------------------------------------------------------------------
// Tracing and compilation
// ---------------------------------------------------------------------------------------

/// Where a Port's values come from, for the mask and expand checks of the Python front end.
struct PortOrigin {
  enum class Kind { source, call_output, expand, reduce, filter, broadcast } kind;
  int index = -1;  ///< source column, or the Port's producer for filter/broadcast
  std::shared_ptr<CallInfo> call;
  std::size_t output = 0;
};

class Program {
 public:
  Program(std::shared_ptr<const rd::RuntimePlan> p, std::vector<int> masks, std::size_t n_sources,
          std::size_t n_outputs)
      : plan(std::move(p)),
        mask_sources(std::move(masks)),
        sources(n_sources),
        outputs(n_outputs) {}
  std::shared_ptr<const rd::RuntimePlan> plan;
  std::vector<int> mask_sources;  ///< source columns read as filter masks (must be bool)
  std::size_t sources;
  std::size_t outputs;
};

/// Records one pipeline into a C++ graph (the same recorder the typed C++ front end uses).
class Trace {
 public:
  Trace() : graph_(std::make_shared<rd::Graph>()) {}

  void enter() { scope_ = std::make_unique<rd::TraceScope>(graph_); }
  void exit() { scope_.reset(); }

  int add_source() {
    const int id = graph_->add_source("object");
    origins_[id] = PortOrigin{PortOrigin::Kind::source, sources_++, nullptr, 0};
    return id;
  }

  std::vector<int> add_call(nb::handle module_key, nb::handle udf, nb::handle init_args,
                            nb::handle init_kwargs, const std::string& name, nb::dict options,
                            const std::vector<int>& inputs, std::size_t positional,
                            nb::list keyword_names, nb::handle static_kwargs,
                            const std::vector<std::string>& statics, std::size_t outputs,
                            const std::string& cpp) {
    const CppUdf* native = nullptr;
    if (!cpp.empty()) {
      auto found = cpp_udfs().find(cpp);
      if (found == cpp_udfs().end())
        throw rayorch::CompileError("CppModule: no C++ UDF named " + cpp);
      native = &found->second;
      if (inputs.size() != native->inputs || !keyword_names.empty() || !static_kwargs.is_none()) {
        throw rayorch::CompileError(fmt::format(
            "CppModule({}) takes {} positional Port input(s) and no keyword arguments; got {} "
            "Port input(s){}",
            cpp, native->inputs, inputs.size(),
            static_kwargs.is_none() ? "" : " and static keyword arguments"));
      }
      outputs = native->outputs;
    }
    std::shared_ptr<ModuleSpec>& spec = modules_[module_key.ptr()];
    if (!spec) {
      keys_.push_back(nb::borrow(module_key));
      spec = std::make_shared<ModuleSpec>();
      spec->udf = Ref::borrow(udf.ptr());
      spec->args = Ref::borrow(init_args.ptr());
      spec->kwargs = init_kwargs.is_none() ? Ref() : Ref::borrow(init_kwargs.ptr());
      names_[spec.get()] = name;
      options_[spec.get()] = module_options(options);
      if (native != nullptr) {
        try {
          native_factories_[spec.get()] = native->factory(init_args);
        } catch (const nb::cast_error&) {
          throw rayorch::CompileError(fmt::format(
              "CppModule({}): the constructor arguments given to pre_init() do not convert to "
              "{}",
              cpp, native->signature));
        }
      }
    }
    auto info = std::make_shared<CallInfo>();
    info->positional = positional;
    for (nb::handle k : keyword_names) info->keyword_names.push_back(Ref::borrow(k.ptr()));
    info->static_kwargs = static_kwargs.is_none() ? Ref() : Ref::borrow(static_kwargs.ptr());
    info->outputs = outputs;
    info->expanded.assign(outputs, 0);
    info->mask.assign(outputs, 0);

    rd::ModuleRecord record;
    record.identity = spec.get();
    record.udf_name = names_[spec.get()];
    record.options = options_[spec.get()];
    if (native != nullptr) {
      record.factory = native_factories_[spec.get()];
    } else {
      record.factory = [spec]() { return build_udf(*spec); };
    }
    record.owner = spec;
    rd::CallRecord call;
    call.inputs = inputs;
    call.output_types.assign(outputs, "object");
    call.static_args = statics;
    if (native != nullptr) {
      call.invoker = native->invoker(info, names_[spec.get()]);
    } else {
      call.invoker = [info](rd::UdfInstance& instance, std::span<const rd::ColumnInput> in) {
        return invoke_udf(*info, instance, in);
      };
    }
    std::vector<int> ids = graph_->add_call(std::move(record), std::move(call));
    for (std::size_t k = 0; k < ids.size(); ++k)
      origins_[ids[k]] = PortOrigin{PortOrigin::Kind::call_output, -1, info, k};
    return ids;
  }

  std::vector<int> add_expand(const std::vector<int>& lists) {
    for (int l : lists) {
      auto it = origins_.find(l);
      if (it != origins_.end() && it->second.kind == PortOrigin::Kind::call_output)
        it->second.call->expanded[it->second.output] = 1;
    }
    std::vector<rd::ListOps> ops(lists.size(), python_list_ops());
    std::vector<int> ids =
        graph_->add_expand(lists, std::move(ops), std::vector<std::string>(lists.size(), "object"));
    for (int id : ids) origins_[id] = PortOrigin{PortOrigin::Kind::expand, -1, nullptr, 0};
    return ids;
  }

  std::vector<int> add_reduce(const std::vector<int>& values, int members) {
    std::vector<int> ids =
        graph_->add_reduce(values, members, std::vector<rd::GroupMaker>(values.size(), &make_group),
                           std::vector<std::string>(values.size(), "list[object]"));
    for (int id : ids) origins_[id] = PortOrigin{PortOrigin::Kind::reduce, -1, nullptr, 0};
    return ids;
  }

  int add_filter(int source, int mask) {
    mark_mask(mask);
    const int id = graph_->add_filter(source, mask);
    origins_[id] = PortOrigin{PortOrigin::Kind::filter, source, nullptr, 0};
    return id;
  }

  int add_broadcast(int source, int like) {
    const int id = graph_->add_broadcast(source, like);
    origins_[id] = PortOrigin{PortOrigin::Kind::broadcast, source, nullptr, 0};
    return id;
  }

  std::string describe(int port) const { return graph_->describe(port); }

  Program compile(const std::vector<int>& outputs, bool optimize) {
    graph_->set_outputs(outputs);
    graph_->seal();
    rayorch::CompileOptions options;
    options.optimize = optimize;
    auto plan = rd::compile_graph(*graph_, options);
    return Program(std::move(plan), mask_sources_, static_cast<std::size_t>(sources_),
                   outputs.size());
  }

  const rd::Graph* graph() const { return graph_.get(); }

 private:
  static rayorch::ModuleOptions module_options(nb::dict d) {
    rayorch::ModuleOptions o;
    for (auto [key, value] : d) {
      const std::string k = nb::cast<std::string>(key);
      if (k == "replicas") {
        o.replicas = nb::cast<int>(value);
      } else if (k == "batch_size") {
        o.batch_size = nb::cast<int>(value);
      } else if (k == "cpus") {
        o.cpus = nb::cast<double>(value);
      } else if (k == "gpus") {
        o.gpus = nb::cast<double>(value);
      } else if (k == "resources") {
        for (auto [rk, rv] : nb::cast<nb::dict>(value))
          o.resources[nb::cast<std::string>(rk)] = nb::cast<double>(rv);
      } else if (k == "recovery") {
        const auto [kind, retries] = nb::cast<std::pair<std::string, int>>(value);
        if (kind == "abort") {
          o.recovery = rayorch::RecoveryPolicy::abort();
        } else if (kind == "retry_batch") {
          o.recovery = rayorch::RecoveryPolicy::retry_batch(retries);
        } else if (kind == "retry_tail") {
          o.recovery = rayorch::RecoveryPolicy::retry_tail(retries);
        } else if (kind == "isolate_tail") {
          o.recovery = rayorch::RecoveryPolicy::isolate_tail();
        } else {
          throw rayorch::CompileError("unknown recovery policy " + kind);
        }
      } else if (k == "infra_retries") {
        o.infra_retries = nb::cast<int>(value);
      } else if (k == "timeout_ms") {
        o.timeout = std::chrono::milliseconds(nb::cast<long long>(value));
      } else if (k == "batch_wait_ms") {
        o.batch_wait = std::chrono::milliseconds(nb::cast<long long>(value));
      } else if (k == "reservation") {
        const std::string r = nb::cast<std::string>(value);
        o.reservation = r == "parent_bound" ? rayorch::Reservation::parent_bound
                                            : rayorch::Reservation::elastic;
      }
    }
    return o;
  }

  // A mask's booleans must come from a Call output or a source column: those are the values
  // the engine reads booleans of (through filters and broadcasts of them).
  void mark_mask(int mask) {
    int port = mask;
    for (;;) {
      auto it = origins_.find(port);
      if (it == origins_.end()) return;  // reported by the compiler
      const PortOrigin& o = it->second;
      switch (o.kind) {
        case PortOrigin::Kind::call_output:
          o.call->mask[o.output] = 1;
          return;
        case PortOrigin::Kind::source:
          mask_sources_.push_back(o.index);
          return;
        case PortOrigin::Kind::filter:
        case PortOrigin::Kind::broadcast:
          port = o.index;
          continue;
        case PortOrigin::Kind::expand:
        case PortOrigin::Kind::reduce:
          throw rayorch::CompileError(fmt::format(
              "F.filter mask {} is {} output: a mask must be a Call output or a source "
              "column (or a filter/broadcast of one); compute the bools with a UDF, e.g. "
              "mask = to_bool(children)",
              graph_->describe(mask),
              o.kind == PortOrigin::Kind::expand ? "an expand" : "a reduce"));
      }
    }
  }

  std::shared_ptr<rd::Graph> graph_;
  std::unique_ptr<rd::TraceScope> scope_;
  std::map<int, PortOrigin> origins_;
  std::map<PyObject*, std::shared_ptr<ModuleSpec>> modules_;
  std::map<const ModuleSpec*, std::string> names_;
  std::map<const ModuleSpec*, rayorch::ModuleOptions> options_;
  std::map<const ModuleSpec*, rd::Factory> native_factories_;
  std::vector<nb::object> keys_;  ///< keeps the module keys alive while the trace lives
  int sources_ = 0;
  std::vector<int> mask_sources_;
};

// ---------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------

/// Raised out of the engine when the Python row callback raised; the Python error is kept
/// and restored once run() holds the GIL again.
struct CallbackAbort {};

nb::dict metrics_dict(const rayorch::RunMetrics& m) {
  nb::dict d;
  d["elapsed_seconds"] = m.elapsed_seconds;
  nb::list calls;
  for (const auto& c : m.calls) {
    nb::dict cd;
    cd["call"] = c.call;
    cd["udf"] = c.udf;
    cd["actors"] = c.actors;
    cd["batch_size"] = c.batch_size;
    cd["mean_batch_fill"] = c.mean_batch_fill;
    cd["rpcs"] = c.rpcs;
    cd["grain_dispatches"] = c.grain_dispatches;
    cd["requeues"] = c.requeues;
    cd["failed_rpcs"] = c.failed_rpcs;
    cd["suppressed_by_barrier"] = c.suppressed_by_barrier;
    nb::dict hist;
    for (auto [size, count] : c.batch_size_histogram) hist[nb::int_(size)] = count;
    cd["batch_size_histogram"] = hist;
    cd["busy_seconds"] = c.busy_seconds;
    calls.append(cd);
  }
  d["calls"] = calls;
  nb::list batches;
  for (const auto& b : m.input_batches) {
    nb::dict bd;
    bd["index"] = b.index;
    bd["first_row"] = b.first_row;
    bd["rows"] = b.rows;
    bd["grains"] = b.grains;
    bd["rpcs"] = b.rpcs;
    bd["admitted_seconds"] = b.admitted_seconds;
    bd["completed_seconds"] = b.completed_seconds;
    batches.append(bd);
  }
  d["input_batches"] = batches;
  d["peak_active_input_batches"] = m.peak_active_input_batches;
  d["root_completed_seconds"] = m.root_completed_seconds;
  d["stale_reports_rejected"] = m.stale_reports_rejected;
  d["actors_replaced"] = m.actors_replaced;
  nb::dict roots;
  for (const auto& [outcome, count] : m.roots_by_outcome) roots[nb::str(outcome.c_str())] = count;
  d["roots_by_outcome"] = roots;
  d["roots_restored"] = m.roots_restored;
  d["journal_discarded_bytes"] = m.journal_discarded_bytes;
  d["file_errors"] = m.file_errors;
  return d;
}

class Core {
 public:
  static Core local(const Program& program) {
    std::unique_ptr<rd::ExecutionCore> core;
    {
      nb::gil_scoped_release release;  // the actors' constructors need the GIL
      core = rd::make_local_core(program.plan, rayorch::LocalBackend{});
    }
    return Core(program, std::move(core));
  }
  /// The Ray backend: `backend` is a started rayorch_cpp._ray_backend.RayBackend.
  static Core ray(const Program& program, nb::object backend) {
    auto pools = make_ray_pools(program.plan, std::move(backend));
    nb::gil_scoped_release release;
    return Core(program,
                std::make_unique<rd::Driver>(program.plan, std::move(pools), rd::DriverOptions{}));
  }
  static Core sync(const Program& program, bool wire) {
    std::unique_ptr<rd::ExecutionCore> core;
    {
      nb::gil_scoped_release release;
      core = rd::make_sync_core(program.plan, wire);
    }
    return Core(program, std::move(core));
  }

  /// Runs the program. Without `on_row`, returns one list per output (source order) and
  /// the metrics; with it, calls on_row(row, outputs) as each row becomes terminal.
  nb::tuple run(nb::list columns, std::size_t input_batch_size,
                std::size_t max_active_input_batches, std::size_t backpressure, bool progress,
                const std::string& trace_path, const std::string& report_path,
                const std::string& reservation, bool lifo, nb::object on_row,
                nb::object on_progress, nb::object long_run) {
    if (running_) {
      throw rayorch::ExecutionError(
          "run() is already in progress on this executor (from another thread or from a row "
          "callback); use one executor per concurrent run");
    }
    if (columns.size() != program_.sources) {
      throw std::invalid_argument(
          fmt::format("the pipeline has {} source columns but {} were "
                      "given; pass one sequence per forward() parameter",
                      program_.sources, columns.size()));
    }
    rd::SourceData sources;
    std::vector<Ref> fast;  // keeps each column's sequence alive while it is read
    for (std::size_t c = 0; c < columns.size(); ++c) {
      PyObject* seq = PySequence_Fast(PyList_GET_ITEM(columns.ptr(), static_cast<Py_ssize_t>(c)),
                                      "each source column must be a sequence");
      if (seq == nullptr) throw nb::python_error();
      fast.push_back(Ref::steal(seq));
      const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(seq));
      if (c == 0) {
        sources.rows = n;
      } else if (n != sources.rows) {
        throw std::invalid_argument(
            fmt::format("source columns are not row-aligned: column 0 has {} rows but column {} "
                        "has {}; pass columns of equal length",
                        sources.rows, c, n));
      }
    }
    for (int c : program_.mask_sources) {
      PyObject** items = PySequence_Fast_ITEMS(fast[static_cast<std::size_t>(c)].get());
      for (std::size_t r = 0; r < sources.rows; ++r) {
        if (!PyBool_Check(items[r])) {
          throw std::invalid_argument(
              fmt::format("source column {} is an F.filter mask, so each row must be a bool; "
                          "row {} is {}",
                          c, r, type_name_of(items[r])));
        }
      }
    }
    for (const Ref& seq : fast) {
      PyObject** items = PySequence_Fast_ITEMS(seq.get());
      auto block = std::make_shared<PyBlock>();
      block->rows.resize(sources.rows);
      std::vector<const void*> values(sources.rows);
      for (std::size_t r = 0; r < sources.rows; ++r) {
        block->rows[r].obj = Py_NewRef(items[r]);
        block->rows[r].truth = items[r] == Py_True;
        values[r] = &block->rows[r];
      }
      sources.blocks.push_back(std::move(block));
      sources.values.push_back(std::move(values));
    }

    rayorch::RunOptions options;
    options.input_batch_size = input_batch_size;
    options.max_active_input_batches = max_active_input_batches;
    options.backpressure = backpressure;
    options.progress = progress;
    options.trace_path = trace_path;
    options.report_path = report_path;
    if (reservation == "elastic") options.reservation = rayorch::Reservation::elastic;
    if (reservation == "parent_bound") options.reservation = rayorch::Reservation::parent_bound;
    if (lifo) options.queue_order = rayorch::QueueOrder::lifo;
    // The run journal, error budget and dead letters (docs/JOURNAL.md), as a dict from
    // _executor.py; outputs are recorded with pickle.
    std::vector<std::string> keys;
    if (!long_run.is_none()) {
      nb::dict d = nb::cast<nb::dict>(long_run);
      options.journal.path = nb::cast<std::string>(d["journal"]);
      options.journal.retry_failed = nb::cast<bool>(d["retry_failed"]);
      options.journal.force = nb::cast<bool>(d["force"]);
      options.journal.allow_other_inputs = nb::cast<bool>(d["allow_other_inputs"]);
      options.journal.sync_every_records = nb::cast<std::size_t>(d["sync_every_records"]);
      options.journal.sync_interval =
          std::chrono::milliseconds(nb::cast<std::int64_t>(d["sync_interval_ms"]));
      options.journal.write_interval =
          std::chrono::milliseconds(nb::cast<std::int64_t>(d["write_interval_ms"]));
      options.dead_letters = nb::cast<std::string>(d["dead_letters"]);
      if (!d["max_failed_roots"].is_none())
        options.max_failed_roots = nb::cast<std::size_t>(d["max_failed_roots"]);
      options.max_failed_fraction = nb::cast<double>(d["max_failed_fraction"]);
      options.min_roots_for_failed_fraction =
          nb::cast<std::size_t>(d["min_roots_for_failed_fraction"]);
      keys = nb::cast<std::vector<std::string>>(d["keys"]);
      if (keys.size() != sources.rows) {
        throw std::invalid_argument(
            fmt::format("the run journal needs one key per source row: {} keys for {} rows",
                        keys.size(), sources.rows));
      }
    }

    const bool streaming = !on_row.is_none();
    const std::size_t outputs = program_.outputs;
    nb::list results;
    if (!streaming) {
      for (std::size_t k = 0; k < outputs; ++k) {
        PyObject* list = PyList_New(static_cast<Py_ssize_t>(sources.rows));
        if (list == nullptr) throw nb::python_error();
        for (std::size_t r = 0; r < sources.rows; ++r)
          PyList_SET_ITEM(list, static_cast<Py_ssize_t>(r), Py_NewRef(Py_None));
        results.append(nb::steal(list));
      }
    }
    PyObject* callback_error[3] = {nullptr, nullptr, nullptr};
    PyObject* results_ptr = results.ptr();
    PyObject* on_row_ptr = on_row.ptr();
    auto deliver = [&](std::size_t row, std::span<const rd::ErasedOutput> e) {
      Gil gil;
      auto item = [](const rd::ErasedOutput& o) -> PyObject* {
        if (o.outcome == rayorch::Outcome::present) return Py_NewRef(object_at(o.value));
        const std::string_view outcome = rayorch::to_string(o.outcome);
        const std::string cause = o.cause ? *o.cause : std::string();
        if (o.origin) {
          return PyObject_CallFunction(registry.make_issue, "s#s#s#s#I", outcome.data(),
                                       static_cast<Py_ssize_t>(outcome.size()), cause.data(),
                                       static_cast<Py_ssize_t>(cause.size()), o.origin->call.data(),
                                       static_cast<Py_ssize_t>(o.origin->call.size()),
                                       o.origin->entity.data(),
                                       static_cast<Py_ssize_t>(o.origin->entity.size()),
                                       static_cast<unsigned>(o.origin->attempts));
        }
        return PyObject_CallFunction(
            registry.make_issue, "s#s#OOO", outcome.data(), static_cast<Py_ssize_t>(outcome.size()),
            cause.data(), static_cast<Py_ssize_t>(cause.size()), Py_None, Py_None, Py_None);
      };
      auto fail = [&]() {
        PyErr_Fetch(&callback_error[0], &callback_error[1], &callback_error[2]);
        throw CallbackAbort{};
      };
      if (!streaming) {
        for (std::size_t k = 0; k < e.size(); ++k) {
          PyObject* v = item(e[k]);
          if (v == nullptr) fail();
          PyObject* list = PyList_GET_ITEM(results_ptr, static_cast<Py_ssize_t>(k));
          PyObject* old = PyList_GET_ITEM(list, static_cast<Py_ssize_t>(row));
          PyList_SET_ITEM(list, static_cast<Py_ssize_t>(row), v);
          Py_DECREF(old);
        }
        return;
      }
      PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(e.size()));
      if (tuple == nullptr) fail();
      for (std::size_t k = 0; k < e.size(); ++k) {
        PyObject* v = item(e[k]);
        if (v == nullptr) {
          Py_DECREF(tuple);
          fail();
        }
        PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(k), v);
      }
      PyObject* r = PyObject_CallFunction(on_row_ptr, "nO", static_cast<Py_ssize_t>(row), tuple);
      Py_DECREF(tuple);
      if (r == nullptr) fail();
      Py_DECREF(r);
    };
    // Progress: on_progress(done, total) at most every 200 ms, and once at the last row.
    PyObject* progress_ptr = on_progress.is_none() ? nullptr : on_progress.ptr();
    const std::size_t total = sources.rows;
    std::size_t done = 0;
    auto last_progress = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    auto sink = [&](std::size_t row, std::span<const rd::ErasedOutput> e) {
      deliver(row, e);
      ++done;
      if (progress_ptr == nullptr) return;
      const auto now = std::chrono::steady_clock::now();
      if (done != total && now - last_progress < std::chrono::milliseconds(200)) return;
      last_progress = now;
      Gil gil;
      PyObject* r = PyObject_CallFunction(progress_ptr, "nn", static_cast<Py_ssize_t>(done),
                                          static_cast<Py_ssize_t>(total));
      if (r == nullptr) {
        PyErr_Fetch(&callback_error[0], &callback_error[1], &callback_error[2]);
        throw CallbackAbort{};
      }
      Py_DECREF(r);
    };

    rayorch::RunMetrics metrics;
    bool aborted_by_callback = false;
    running_ = true;  // set and cleared under the GIL
    struct Clear {
      bool& flag;
      ~Clear() { flag = false; }
    } clear{running_};
    {
      nb::gil_scoped_release release;
      try {
        if (long_run.is_none()) {
          metrics = core_->run(std::move(sources), options, sink);
        } else {
          metrics = rd::run_journaled(*core_, std::move(sources), keys, options, sink,
                                      pickle_codec(outputs, callback_error));
        }
      } catch (const CallbackAbort&) {
        aborted_by_callback = true;
      }
    }
    if (aborted_by_callback) {
      PyErr_Restore(callback_error[0], callback_error[1], callback_error[2]);
      throw nb::python_error();
    }
    return nb::make_tuple(results, metrics_dict(metrics));
  }

  // Records root outputs in the run journal with pickle (any picklable value), and
  // restores them with it. Runs on the driver thread: takes the GIL.
  static rd::OutputCodec pickle_codec(std::size_t outputs, PyObject** callback_error) {
    rd::OutputCodec codec;
    codec.outputs = outputs;
    codec.available = true;
    codec.encode = [callback_error](std::size_t, const void* value, std::string& out) {
      Gil gil;
      static PyObject* dumps = PyObject_GetAttrString(PyImport_ImportModule("pickle"), "dumps");
      PyObject* bytes = PyObject_CallOneArg(dumps, object_at(value));
      if (bytes == nullptr) {
        PyErr_Fetch(&callback_error[0], &callback_error[1], &callback_error[2]);
        throw CallbackAbort{};
      }
      char* data = nullptr;
      Py_ssize_t size = 0;
      PyBytes_AsStringAndSize(bytes, &data, &size);
      out.append(data, static_cast<std::size_t>(size));
      Py_DECREF(bytes);
    };
    codec.restore = [callback_error](std::size_t row, const rd::JournalEntry& entry,
                                     const rd::RootSink& sink) {
      std::vector<PyValue> values(entry.ports.size());
      std::vector<rd::ErasedOutput> erased(entry.ports.size());
      {
        Gil gil;
        static PyObject* loads = PyObject_GetAttrString(PyImport_ImportModule("pickle"), "loads");
        for (std::size_t k = 0; k < entry.ports.size(); ++k) {
          const rd::JournalPort& p = entry.ports[k];
          if (p.outcome != rayorch::Outcome::present) {
            erased[k] = rd::ErasedOutput{p.outcome, &p.cause, nullptr, p.origin};
            continue;
          }
          PyObject* bytes =
              PyBytes_FromStringAndSize(p.value.data(), static_cast<Py_ssize_t>(p.value.size()));
          values[k].obj = bytes == nullptr ? nullptr : PyObject_CallOneArg(loads, bytes);
          Py_XDECREF(bytes);
          if (values[k].obj == nullptr) {
            for (PyValue& v : values) Py_XDECREF(v.obj);
            PyErr_Fetch(&callback_error[0], &callback_error[1], &callback_error[2]);
            throw CallbackAbort{};
          }
          erased[k] = rd::ErasedOutput{p.outcome, nullptr, &values[k], std::nullopt};
        }
      }
      struct Release {
        std::vector<PyValue>& values;
        ~Release() {
          Gil gil;
          for (PyValue& v : values) Py_XDECREF(v.obj);
        }
      } release{values};
      sink(row, erased);
    };
    return codec;
  }

  void close() {
    if (running_) {
      throw rayorch::ExecutionError(
          "close() was called while run() is in progress on this executor; close it after "
          "the run returns");
    }
    nb::gil_scoped_release release;  // actors may be finishing a Python call
    core_->close();
  }
  bool closed() const { return core_->closed(); }

  nb::list rpc_log() const {
    nb::list out;
    for (const auto& r : core_->rpc_log()) {
      nb::dict d;
      d["call"] = r.call;
      d["input_batch"] = r.input_batch;
      d["grains"] = r.grains;
      d["generations"] = r.generations;
      d["failed"] = r.failed;
      d["text"] = r.to_string();
      out.append(d);
    }
    return out;
  }

 public:
  Core(Core&&) noexcept = default;
  Core& operator=(Core&&) = delete;
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;
  /// Runs with the GIL held (Python drops the object): the actor threads may need it to
  /// finish and to release their UDF instances, so it is released while they stop.
  ~Core() {
    if (!core_) return;
    if (python_alive() && PyGILState_Check() != 0) {
      nb::gil_scoped_release release;
      core_.reset();
    } else {
      core_.reset();
    }
  }

 private:
  Core(const Program& program, std::unique_ptr<rd::ExecutionCore> core)
      : program_(program), core_(std::move(core)) {}
  Program program_;
  std::unique_ptr<rd::ExecutionCore> core_;
  bool running_ = false;
};

/// Pickling through the value's rayorch::Codec, so a C++ value can travel between processes
/// (the Ray backend's actors and object store).
template <class T, class Class>
Class pickle_by_codec(Class cls) {
  cls.def("__getstate__",
          [](const T& v) {
            std::string out;
            rayorch::Codec<T>::encode(v, out);
            return nb::bytes(out.data(), out.size());
          })
      .def("__setstate__", [](T& self, nb::bytes state) {
        std::string_view in(state.c_str(), state.size());
        new (&self) T(rayorch::Codec<T>::decode(in));
        if (!in.empty()) throw rayorch::DecodeError("trailing bytes in a pickled C++ value");
      });
  return cls;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Bindings of the RayOrch C++ engine (use the rayorch_cpp package, not this module).";
  // A compiled program holds its UDF classes, whose methods' globals may hold the executor
  // that holds the program: a cycle through C++ that Python's collector cannot see. Such
  // objects live until the process exits; nanobind would report them as leaks then.
  nb::set_leak_warnings(false);

  nb::exception<rayorch::CompileError>(m, "CompileError", PyExc_ValueError);
  nb::exception<rayorch::ExecutionError>(m, "ExecutionError", PyExc_RuntimeError);

  m.def(
      "configure",
      [](nb::handle record_failure, nb::handle group_failure, nb::handle make_issue,
         nb::handle actor_lost) {
        // Kept for the life of the process (the classes outlive every executor).
        registry.record_failure = Py_NewRef(record_failure.ptr());
        registry.group_failure = Py_NewRef(group_failure.ptr());
        registry.make_issue = Py_NewRef(make_issue.ptr());
        registry.actor_lost = Py_NewRef(actor_lost.ptr());
      },
      nb::arg("record_failure"), nb::arg("group_failure"), nb::arg("make_issue"),
      nb::arg("actor_lost"),
      "Registers the failure classes, the OutputIssue factory and the ActorLost exception of "
      "the Python package.");

  m.def(
      "foreign_port",
      [](const Trace* owner, int port, const std::string& what) {
        rd::throw_foreign_port(owner ? owner->graph() : nullptr, port, what.c_str());
      },
      nb::arg("owner").none(), nb::arg("port"), nb::arg("what"),
      "Raises the CompileError for a Port used outside its own trace.");

  m.def(
      "cpp_udfs",
      []() {
        nb::dict out;
        for (const auto& [name, udf] : cpp_udfs()) {
          nb::dict d;
          d["doc"] = udf.doc;
          d["inputs"] = udf.inputs;
          d["outputs"] = udf.outputs;
          d["constructor"] = udf.signature;
          out[nb::str(name.c_str())] = d;
        }
        return out;
      },
      "The C++ UDFs usable in Python pipelines: name -> doc, inputs, outputs, constructor.");

#if RAYORCH_PYTHON_PDF2MD
  // The pdf2md values, as opaque C++ objects in Python (a page image stays one C++ buffer).
  auto page_ref =
      nb::class_<pdf2md::PageRef>(m, "PageRef", "One page of a PDF as listed by Pdf2mdOpen.");
  pickle_by_codec<pdf2md::PageRef>(page_ref);
  page_ref.def(nb::init<>())
      .def_rw("number", &pdf2md::PageRef::number, "1-based page number")
      .def("__repr__",
           [](const pdf2md::PageRef& r) { return fmt::format("PageRef(number={})", r.number); });
  auto page_image =
      nb::class_<pdf2md::PageImage>(m, "PageImage", "A rendered page: 8-bit grayscale pixels.");
  pickle_by_codec<pdf2md::PageImage>(page_image);
  page_image.def_ro("number", &pdf2md::PageImage::number, "1-based page number")
      .def_ro("width", &pdf2md::PageImage::width, "width in pixels")
      .def_ro("height", &pdf2md::PageImage::height, "height in pixels")
      .def_ro("dpi", &pdf2md::PageImage::dpi, "resolution")
      .def_prop_ro(
          "pixels",
          [](const pdf2md::PageImage& i) {
            return nb::bytes(reinterpret_cast<const char*>(i.pixels.data()), i.pixels.size());
          },
          "width * height bytes, rows without padding (a copy)");
  auto document_info =
      nb::class_<pdf2md::DocumentInfo>(m, "DocumentInfo", "A document's name and page count.");
  pickle_by_codec<pdf2md::DocumentInfo>(document_info);
  document_info.def_ro("stem", &pdf2md::DocumentInfo::stem, "file name without extension")
      .def_ro("pages", &pdf2md::DocumentInfo::pages, "page count");
  auto markdown = nb::class_<pdf2md::Markdown>(m, "Markdown", "One finished document.");
  pickle_by_codec<pdf2md::Markdown>(markdown);
  markdown.def_ro("stem", &pdf2md::Markdown::stem, "file name without extension")
      .def_ro("pages", &pdf2md::Markdown::pages, "page count")
      .def_ro("text", &pdf2md::Markdown::text, "the Markdown text");
  m.def(
      "pdf2md_make_samples",
      [](const std::string& dir, int docs, std::uint64_t seed, int max_pages, int corrupt) {
        pdf2md::SampleOptions o;
        o.docs = docs;
        o.seed = seed;
        o.max_pages = max_pages;
        o.corrupt = corrupt;
        nb::list out;
        pdf2md::SampleCorpus corpus;
        {
          nb::gil_scoped_release release;
          corpus = pdf2md::make_samples(dir, o);
        }
        for (const auto& d : corpus.documents) out.append(nb::make_tuple(d.pdf, d.pages));
        return out;
      },
      nb::arg("dir"), nb::arg("docs") = 4, nb::arg("seed") = 1, nb::arg("max_pages") = 6,
      nb::arg("corrupt") = 1,
      "Writes sample PDFs with known text into `dir`; returns (pdf path, page texts) per "
      "readable document.");
  m.def("pdf2md_word_accuracy", &pdf2md::word_accuracy, nb::arg("expected"), nb::arg("actual"),
        "Word accuracy of `actual` against `expected` (1.0: every word right).");
#endif

#if RAYORCH_PYTHON_VIDEO
  // The video values, as C++ objects in Python (a frame image stays one C++ buffer).
  pickle_by_codec<video::VideoInfo>(
      nb::class_<video::VideoInfo>(m, "VideoInfo", "What a video is, read from its container."))
      .def_ro("path", &video::VideoInfo::path, "the file")
      .def_ro("stem", &video::VideoInfo::stem, "file name without extension")
      .def_ro("codec", &video::VideoInfo::codec, "e.g. mpeg4")
      .def_ro("duration_seconds", &video::VideoInfo::duration_seconds, "0 when unknown")
      .def_ro("fps", &video::VideoInfo::fps, "average frame rate, 0 when unknown")
      .def_ro("width", &video::VideoInfo::width, "width in pixels")
      .def_ro("height", &video::VideoInfo::height, "height in pixels");
  pickle_by_codec<video::Scene>(
      nb::class_<video::Scene>(m, "Scene", "One shot between two cuts (frames inclusive)."))
      .def_ro("index", &video::Scene::index, "0-based scene number")
      .def_ro("first_frame", &video::Scene::first_frame, "first frame")
      .def_ro("last_frame", &video::Scene::last_frame, "last frame")
      .def_ro("start_seconds", &video::Scene::start_seconds, "start time")
      .def_ro("end_seconds", &video::Scene::end_seconds, "end time")
      .def("__repr__", [](const video::Scene& s) {
        return fmt::format("Scene(index={}, frames={}..{})", s.index, s.first_frame, s.last_frame);
      });
  pickle_by_codec<video::FrameRef>(
      nb::class_<video::FrameRef>(m, "FrameRef", "A sampled frame of a scene: where to find it."))
      .def_ro("scene", &video::FrameRef::scene, "scene number")
      .def_ro("frame", &video::FrameRef::frame, "frame number in the video")
      .def_ro("seconds", &video::FrameRef::seconds, "presentation time")
      .def("__repr__", [](const video::FrameRef& r) {
        return fmt::format("FrameRef(scene={}, frame={})", r.scene, r.frame);
      });
  pickle_by_codec<video::FrameImage>(
      nb::class_<video::FrameImage>(m, "FrameImage", "A decoded frame: 8-bit gray pixels."))
      .def_ro("frame", &video::FrameImage::frame, "frame number in the video")
      .def_ro("width", &video::FrameImage::width, "width in pixels")
      .def_ro("height", &video::FrameImage::height, "height in pixels")
      .def_prop_ro(
          "pixels",
          [](const video::FrameImage& i) {
            return nb::bytes(reinterpret_cast<const char*>(i.pixels.data()), i.pixels.size());
          },
          "width * height bytes, rows without padding (a copy)");
  pickle_by_codec<video::SceneRecord>(
      nb::class_<video::SceneRecord>(m, "SceneRecord", "Everything known about one scene."))
      .def_ro("index", &video::SceneRecord::index, "0-based scene number")
      .def_ro("first_frame", &video::SceneRecord::first_frame, "first frame")
      .def_ro("last_frame", &video::SceneRecord::last_frame, "last frame")
      .def_ro("text", &video::SceneRecord::text, "the most frequent frame text");
  pickle_by_codec<video::VideoRecord>(
      nb::class_<video::VideoRecord>(m, "VideoRecord", "One finished video."))
      .def_prop_ro(
          "stem", [](const video::VideoRecord& r) { return r.info.stem; },
          "file name without extension")
      .def_ro("frames", &video::VideoRecord::frames, "frames decoded while finding the scenes")
      .def_ro("scenes", &video::VideoRecord::scenes, "scene records in order")
      .def("to_json", &video::to_json_line, "the record's line in video2jsonl's output");
  m.def(
      "video_make_samples",
      [](const std::string& dir, int videos, std::uint64_t seed, int max_scenes,
         int min_scene_frames, int max_scene_frames, int corrupt) {
        video::CorpusOptions o;
        o.videos = videos;
        o.seed = seed;
        o.max_scenes = max_scenes;
        o.min_scene_frames = min_scene_frames;
        o.max_scene_frames = max_scene_frames;
        o.corrupt = corrupt;
        video::VideoCorpus corpus;
        {
          nb::gil_scoped_release release;
          corpus = video::make_videos(dir, o);
        }
        nb::list out;
        for (const auto& v : corpus.videos) {
          nb::list scenes;
          for (const auto& s : v.scenes)
            scenes.append(nb::make_tuple(s.first_frame, s.last_frame, s.text));
          out.append(nb::make_tuple(corpus.dir + "/" + v.file, scenes));
        }
        return out;
      },
      nb::arg("dir"), nb::arg("videos") = 3, nb::arg("seed") = 1, nb::arg("max_scenes") = 5,
      nb::arg("min_scene_frames") = 3, nb::arg("max_scene_frames") = 7, nb::arg("corrupt") = 1,
      "Writes sample videos with known scenes and captions into `dir` (and `corrupt` corrupt "
      "files: corrupt.mp4 when one); returns (video path, [(first frame, last frame, caption)]) "
      "per readable video.");
  m.def(
      "video_cpp_records",
      [](const std::vector<std::string>& paths, int every, int per_scene) {
        video::PipelineConfig config;
        config.sampling = {.every = every, .per_scene = per_scene};
        std::vector<std::string> lines;
        {
          nb::gil_scoped_release release;
          rayorch::Executor ex(video::compile_pipeline(config));
          rayorch::RunOptions options;
          options.progress = false;
          for (const auto& o : ex.run(paths, options).outputs)
            lines.push_back(o.ok() ? video::to_json_line(o.value()) : "failed: " + o.issue().cause);
        }
        return lines;
      },
      nb::arg("paths"), nb::arg("every") = 0, nb::arg("per_scene") = 3,
      "Runs the C++ video pipeline (video::VideoPipeline, default stages) on `paths`: one "
      "video2jsonl line per video, or 'failed: CAUSE'.");
#endif

  nb::class_<Program>(m, "Program", "An immutable compiled program (a RuntimePlan).")
      .def(
          "explain", [](const Program& p) { return rd::explain_plan(*p.plan); },
          "One line per Port, `pN kind dD <- [inputs] => rule`, plus rewrite lines.")
      .def(
          "pools",
          [](const Program& p) {
            nb::list out;
            for (const rd::PlanPool& pool : p.plan->pools) {
              nb::dict d;
              d["name"] = pool.name;
              d["replicas"] = pool.options.replicas;
              d["cpus"] = pool.options.cpus;
              d["gpus"] = pool.options.gpus;
              nb::dict resources;
              for (const auto& [k, v] : pool.options.resources) resources[nb::str(k.c_str())] = v;
              d["resources"] = resources;
              d["calls"] = pool.calls;
              out.append(d);
            }
            return out;
          },
          "The actor pools in plan order: name, replicas, cpus, gpus, resources, calls.")
      .def_prop_ro("sources", [](const Program& p) { return p.sources; })
      .def_prop_ro("outputs", [](const Program& p) { return p.outputs; });

  nb::class_<Trace>(m, "Trace", "Records one pipeline into the engine's graph builder.")
      .def(nb::init<>())
      .def("enter", &Trace::enter)
      .def("exit", &Trace::exit)
      .def("add_source", &Trace::add_source)
      .def("add_call", &Trace::add_call, nb::arg("module_key"), nb::arg("udf"),
           nb::arg("init_args"), nb::arg("init_kwargs").none(), nb::arg("name"), nb::arg("options"),
           nb::arg("inputs"), nb::arg("positional"), nb::arg("keyword_names"),
           nb::arg("static_kwargs").none(), nb::arg("statics"), nb::arg("outputs"),
           nb::arg("cpp") = "")
      .def("add_expand", &Trace::add_expand)
      .def("add_reduce", &Trace::add_reduce)
      .def("add_filter", &Trace::add_filter)
      .def("add_broadcast", &Trace::add_broadcast)
      .def("describe", &Trace::describe)
      .def("compile", &Trace::compile, nb::arg("outputs"), nb::arg("optimize"));

  rayorch::python::bind_ray_contract(m);
  nb::class_<rayorch::python::RayWorker>(
      m, "RayWorker", "The worker of one Ray actor: one pool's UDF instance and its RPCs.")
      .def(
          "__init__",
          [](rayorch::python::RayWorker* self, const Program& program, int pool) {
            nb::gil_scoped_release release;  // Python constructors take the GIL themselves
            new (self) rayorch::python::RayWorker(program.plan, pool);
          },
          nb::arg("program"), nb::arg("pool"))
      .def("run", &rayorch::python::RayWorker::run,
           "run(task, *blocks) -> (status, *output blocks)")
      .def("cached_blocks", &rayorch::python::RayWorker::cached_blocks,
           "How many blocks this actor holds from earlier RPCs.");

  nb::class_<Core>(m, "Core", "An executor core: the local backend or the synchronous core.")
      .def_static("local", &Core::local, nb::arg("program"))
      .def_static("sync", &Core::sync, nb::arg("program"), nb::arg("wire") = false)
      .def_static("ray", &Core::ray, nb::arg("program"), nb::arg("backend"))
      .def("run", &Core::run, nb::arg("columns"), nb::arg("input_batch_size"),
           nb::arg("max_active_input_batches"), nb::arg("backpressure"), nb::arg("progress"),
           nb::arg("trace_path"), nb::arg("report_path"), nb::arg("reservation"), nb::arg("lifo"),
           nb::arg("on_row").none(), nb::arg("on_progress").none() = nb::none(),
           nb::arg("long_run").none() = nb::none())
      .def("close", &Core::close)
      .def_prop_ro("closed", &Core::closed)
      .def("rpc_log", &Core::rpc_log);
}
