// The Ray backend's contract types and its typed client. See ray_contract.h.
#include "ray_contract.h"

#include <string>
#include <utility>

#include <fmt/format.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "rayorch/errors.h"

namespace nb = nanobind;

namespace rayorch::python {
namespace {

std::string to_string(const nb::bytes& b) {
  return std::string(b.c_str(), b.size());
}

nb::bytes to_bytes(const std::string& s) {
  return nb::bytes(s.data(), s.size());
}

}  // namespace

void bind_ray_contract(nb::module_& m) {
  nb::enum_<CallStatus>(m, "CallStatus", "How one call of the Ray backend ended.")
      .value("ok", CallStatus::ok, "The actor ran the call; `report` holds its report.")
      .value("call_failed", CallStatus::call_failed,
             "The actor ran the call and it failed as a whole.")
      .value("udf_lost", CallStatus::udf_lost,
             "The UDF raised ActorLost; the actor rebuilt its UDF instance.")
      .value("udf_lost_unrebuilt", CallStatus::udf_lost_unrebuilt,
             "The UDF raised ActorLost and its instance could not be rebuilt.")
      .value("actor_lost", CallStatus::actor_lost, "Ray: the actor or its node is gone.")
      .value("block_lost", CallStatus::block_lost,
             "Ray: an input block was lost with its node (the engine rebuilds it).")
      .value("ray_error", CallStatus::ray_error,
             "Ray: any other error; the call did not finish on the actor.");

  nb::class_<CallReport>(m, "CallReport", "What the driver learns of one finished call.")
      .def(
          "__init__",
          [](CallReport* self, CallStatus status, const nb::bytes& report, std::string error,
             double start_s, double end_s, std::string rebuild_error, std::string lost_object,
             bool actor_held) {
            new (self)
                CallReport{status, to_string(report),        std::move(error),       start_s,
                           end_s,  std::move(rebuild_error), std::move(lost_object), actor_held};
          },
          nb::arg("status"), nb::arg("report") = nb::bytes("", 0), nb::arg("error") = "",
          nb::arg("start_s") = 0.0, nb::arg("end_s") = 0.0, nb::arg("rebuild_error") = "",
          nb::arg("lost_object") = "", nb::arg("actor_held") = false)
      .def_ro("status", &CallReport::status)
      .def_prop_ro("report", [](const CallReport& r) { return to_bytes(r.report); })
      .def_ro("error", &CallReport::error)
      .def_ro("start_s", &CallReport::start_s)
      .def_ro("end_s", &CallReport::end_s)
      .def_ro("rebuild_error", &CallReport::rebuild_error)
      .def_ro("lost_object", &CallReport::lost_object)
      .def_ro("actor_held", &CallReport::actor_held)
      // An actor's report travels to the driver through Ray's object store.
      .def("__getstate__",
           [](const CallReport& r) {
             return nb::make_tuple(r.status, to_bytes(r.report), r.error, r.start_s, r.end_s,
                                   r.rebuild_error, r.lost_object, r.actor_held);
           })
      .def("__setstate__",
           [](CallReport& r, const nb::tuple& state) {
             if (state.size() != 8) throw nb::value_error("CallReport: a state of 8 fields");
             new (&r) CallReport{
                 nb::cast<CallStatus>(state[0]),  to_string(nb::cast<nb::bytes>(state[1])),
                 nb::cast<std::string>(state[2]), nb::cast<double>(state[3]),
                 nb::cast<double>(state[4]),      nb::cast<std::string>(state[5]),
                 nb::cast<std::string>(state[6]), nb::cast<bool>(state[7])};
           })
      .def("__repr__", [](const CallReport& r) {
        return fmt::format("CallReport(status={}, report=<{} bytes>, error={:?})",
                           static_cast<int>(r.status), r.report.size(), r.error);
      });

  nb::class_<FinishedCall>(m, "FinishedCall",
                           "A call whose report is in, under the token of its submission.")
      .def(
          "__init__",
          [](FinishedCall* self, std::uint64_t token, const CallReport& report) {
            new (self) FinishedCall{token, report};
          },
          nb::arg("token"), nb::arg("report"))
      .def_ro("token", &FinishedCall::token)
      .def_ro("report", &FinishedCall::report);
}

// ---------------------------------------------------------------------------------------
// RayBackendClient: each method names its RayBackendProtocol method once
// ---------------------------------------------------------------------------------------

RayBackendClient::RayBackendClient(const RayBackendClient& other) {
  Gil gil;
  backend_ = other.backend_;
}

RayBackendClient::~RayBackendClient() {
  if (!python_alive()) {
    backend_.release();  // the interpreter is going: leak rather than touch it
    return;
  }
  Gil gil;
  backend_ = nb::object();
}

std::vector<int> RayBackendClient::actors_per_pool() const {
  Gil gil;
  return nb::cast<std::vector<int>>(backend_.attr("actors_per_pool")());
}

std::vector<int> RayBackendClient::max_tasks_in_flight_per_actor() const {
  Gil gil;
  return nb::cast<std::vector<int>>(backend_.attr("max_tasks_in_flight_per_actor")());
}

double RayBackendClient::startup_timeout_s() const {
  Gil gil;
  return nb::cast<double>(backend_.attr("startup_timeout_s"));
}

std::string RayBackendClient::abandon_starts(int pool, const std::vector<int>& actors) const {
  Gil gil;
  return nb::cast<std::string>(backend_.attr("abandon_starts")(pool, actors));
}

std::vector<std::pair<int, int>> RayBackendClient::take_resumed() const {
  Gil gil;
  return nb::cast<std::vector<std::pair<int, int>>>(backend_.attr("take_resumed")());
}

std::vector<std::tuple<int, int, std::string>> RayBackendClient::take_started() const {
  Gil gil;
  return nb::cast<std::vector<std::tuple<int, int, std::string>>>(backend_.attr("take_started")());
}

std::vector<std::tuple<std::string, std::string, double, std::string>>
RayBackendClient::take_node_losses() const {
  Gil gil;
  return nb::cast<std::vector<std::tuple<std::string, std::string, double, std::string>>>(
      backend_.attr("take_node_losses")());
}

Ref RayBackendClient::put(nb::handle values) const {
  Gil gil;
  nb::object ref = backend_.attr("put")(values);
  return Ref::borrow(ref.ptr());
}

nb::list RayBackendClient::get(nb::list refs) const {
  Gil gil;
  const std::size_t n = refs.size();
  nb::object got = backend_.attr("get")(refs);
  if (!nb::isinstance<nb::list>(got) || nb::len(got) != n)
    throw ExecutionError(fmt::format("the Ray backend's get() must return a list of {}", n));
  return nb::borrow<nb::list>(got);
}

Ref RayBackendClient::export_block(int pool, int actor, std::uint64_t block) const {
  Gil gil;
  nb::object ref = backend_.attr("export_block")(pool, actor, block);
  return Ref::borrow(ref.ptr());
}

std::vector<Ref> RayBackendClient::submit(int pool, int actor, std::uint64_t token,
                                          std::size_t output_blocks, const std::string& task,
                                          nb::tuple blocks) const {
  Gil gil;
  nb::object out =
      backend_.attr("submit")(pool, actor, token, output_blocks, to_bytes(task), std::move(blocks));
  std::vector<Ref> refs;
  refs.reserve(output_blocks);
  for (nb::handle ref : out) refs.push_back(Ref::borrow(ref.ptr()));
  if (refs.size() != output_blocks) {
    throw ExecutionError(
        fmt::format("the Ray backend's submit() returned {} ObjectRefs for {} output blocks",
                    refs.size(), output_blocks));
  }
  return refs;
}

std::vector<FinishedCall> RayBackendClient::wait(double timeout_s) const {
  Gil gil;
  nb::object done = backend_.attr("wait")(timeout_s);
  std::vector<FinishedCall> out;
  for (nb::handle item : done) out.push_back(nb::cast<FinishedCall>(item));
  return out;
}

void RayBackendClient::replace(int pool, int actor) const {
  Gil gil;
  backend_.attr("replace")(pool, actor);
}

void RayBackendClient::restart_lost(int pool, int actor) const {
  Gil gil;
  backend_.attr("restart_lost")(pool, actor);
}

void RayBackendClient::restart_held(int pool, int actor) const {
  Gil gil;
  backend_.attr("restart_held")(pool, actor);
}

std::vector<std::pair<int, int>> RayBackendClient::restart_idle_lost() const {
  Gil gil;
  return nb::cast<std::vector<std::pair<int, int>>>(backend_.attr("restart_idle_lost")());
}

void RayBackendClient::start(int pool, int actor) const {
  Gil gil;
  backend_.attr("start")(pool, actor);
}

void RayBackendClient::retire(int pool, int actor) const {
  Gil gil;
  backend_.attr("retire")(pool, actor);
}

void RayBackendClient::stop() const {
  Gil gil;
  backend_.attr("stop")();
}

}  // namespace rayorch::python
