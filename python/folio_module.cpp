// folio._folio: the C++ side of the Python module (python/folio/__init__.py is the API users see).
// A thin binding of EmbeddedEngine (src/embed/embedded_engine.h): every call that waits or works
// releases the GIL, so Python threads sharing one engine run and batch together; folio's errors
// become the module's exceptions (InvalidInput is a ValueError, Busy a RuntimeError).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "embed/embedded_engine.h"
#include "server/api_error.h"

namespace py = pybind11;
using folio::EmbeddedEngine;
using folio::OcrJob;
using folio::TextRun;

namespace {

PyObject* g_error = nullptr;          // folio.Error(Exception)
PyObject* g_invalid_input = nullptr;  // folio.InvalidInput(Error, ValueError)
PyObject* g_unsupported = nullptr;    // folio.Unsupported(Error, NotImplementedError)
PyObject* g_busy = nullptr;           // folio.Busy(Error, RuntimeError): the queue is full, retry later

PyObject* new_exception(py::module_& m, const char* name, PyObject* also) {
  const std::string qualified = std::string("folio.") + name;
  PyObject* bases = also ? PyTuple_Pack(2, g_error, also) : nullptr;
  PyObject* type = PyErr_NewException(qualified.c_str(), bases ? bases : PyExc_Exception, nullptr);
  Py_XDECREF(bases);
  m.add_object(name, py::handle(type));
  return type;
}

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const folio::ApiError& e) {
    PyErr_SetString(e.status == 400 ? g_invalid_input : e.status == 503 ? g_busy : g_error, e.what());
  } catch (const folio::Error& e) {
    PyObject* type = g_error;
    if (e.kind() == folio::Error::Kind::InvalidInput) type = g_invalid_input;
    else if (e.kind() == folio::Error::Kind::Unsupported) type = g_unsupported;
    else if (e.kind() == folio::Error::Kind::Io) type = PyExc_OSError;
    else if (e.kind() == folio::Error::Kind::OutOfMemory) type = PyExc_MemoryError;
    PyErr_SetString(type, e.what());
  }
}

// JSON for Python: a model may write bytes that are not UTF-8; they become U+FFFD, as the server's
// answers have them.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// An input: a path (str: a file, or a directory of images) or (name, bytes).
void add_upload(const py::handle& item, std::vector<folio::UploadedFile>& files) {
  if (py::isinstance<py::tuple>(item)) {
    auto t = item.cast<py::tuple>();
    files.push_back(folio::UploadedFile{t[0].cast<std::string>(), "", t[1].cast<std::string>()});
    return;
  }
  for (folio::UploadedFile& f : EmbeddedEngine::read_input(item.cast<std::string>())) files.push_back(std::move(f));
}


void bind_ocr_job(py::module_& m) {
  py::class_<OcrJob>(m, "_OcrJob")
      .def("poll",
           [](OcrJob& j, int wait_ms) {
             OcrJob::Progress p;
             {
               py::gil_scoped_release free;
               p = j.poll(std::chrono::milliseconds(wait_ms));
             }
             return py::make_tuple(p.pages, p.done);
           })
      .def("page_count", &OcrJob::page_count)
      .def("page_json", [](const OcrJob& j, size_t i) { return dump(j.page_json(i)); })
      .def("markdown_piece", &OcrJob::markdown_piece)
      .def("take_text", [](OcrJob& j) { return py::bytes(j.take_text()); })
      .def("result_json",
           [](const OcrJob& j) {
             if (auto e = j.failure()) throw *e;
             return dump(j.result());
           })
      .def("cancel", [](OcrJob& j) {
        py::gil_scoped_release free;
        j.cancel();
      });
}

void bind_text_run(py::module_& m) {
  py::class_<TextRun>(m, "_TextRun")
      .def("poll",
           [](TextRun& r, int wait_ms) {
             std::string text;
             {
               py::gil_scoped_release free;
               text = r.poll(std::chrono::milliseconds(wait_ms));
             }
             return py::bytes(text);
           })
      .def("done", &TextRun::done)
      .def("result", [](const TextRun& r) {
        const folio::SequenceResult& s = r.result();
        py::dict d;
        d["tokens"] = s.tokens;
        d["finish_reason"] = r.finish_reason();
        d["prompt_tokens"] = s.prompt_tokens;
        d["completion_tokens"] = static_cast<int64_t>(s.tokens.size());
        d["ttft_ms"] = s.ttft_ms;
        d["decode_ms"] = s.decode_ms;
        return d;
      });
}

void bind_engine(py::module_& m) {
  py::class_<EmbeddedEngine>(m, "_Engine")
      .def(py::init([](const std::string& model, const std::map<std::string, std::string>& options) {
             py::gil_scoped_release free;
             return std::make_unique<EmbeddedEngine>(model, options);
           }),
           py::arg("model"), py::arg("options"))
      .def_static("option_names", &EmbeddedEngine::option_names)
      .def("start_ocr",
           [](EmbeddedEngine& e, const py::list& inputs, const std::string& pages, std::optional<int64_t> max_tokens) {
             std::vector<folio::UploadedFile> files;
             for (const py::handle& item : inputs) add_upload(item, files);
             py::gil_scoped_release free;
             return e.start_ocr(std::move(files), pages, max_tokens);
           },
           py::keep_alive<0, 1>())  // a job reads the engine: the engine lives while the job does
      .def("start_text",
           [](EmbeddedEngine& e, const std::string& prompt, std::optional<int64_t> max_tokens, float temperature, float top_p,
              uint64_t seed, bool add_bos) {
             folio::TextOptions o;
             o.max_tokens = max_tokens;
             o.temperature = temperature;
             o.top_p = top_p;
             o.seed = seed;
             o.add_bos = add_bos;
             py::gil_scoped_release free;
             return e.start_text(prompt, o);
           },
           py::keep_alive<0, 1>())
      .def_property_readonly("model_id", &EmbeddedEngine::model_id)
      .def_property_readonly("reads_documents", &EmbeddedEngine::reads_documents)
      .def("stats", [](const EmbeddedEngine& e) {
        const folio::SchedulerStats s = e.stats();
        py::dict d;
        d["running"] = s.running, d["queued"] = s.queued, d["max_batch_seen"] = s.max_batch_seen;
        d["steps"] = s.steps, d["prompt_tokens"] = s.prompt_tokens, d["generated_tokens"] = s.generated_tokens;
        d["kv_bytes_in_use"] = s.kv_bytes_in_use, d["kv_bytes_peak"] = s.kv_bytes_peak, d["kv_bytes_capacity"] = s.kv_bytes_capacity;
        return d;
      });
}

}  // namespace

PYBIND11_MODULE(_folio, m) {
  m.doc() = "folio's engine (use the folio package, not this module)";
  g_error = new_exception(m, "Error", nullptr);
  g_invalid_input = new_exception(m, "InvalidInput", PyExc_ValueError);
  g_unsupported = new_exception(m, "Unsupported", PyExc_NotImplementedError);
  g_busy = new_exception(m, "Busy", PyExc_RuntimeError);
  py::register_exception_translator(&translate);
  bind_ocr_job(m);
  bind_text_run(m);
  bind_engine(m);
}
