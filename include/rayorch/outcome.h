// Terminal outcomes of logical Items, typed per-row failures and per-root outputs.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rayorch {

/// The terminal outcome of an Item (the value of one Port for one Entity).
enum class Outcome : std::uint8_t {
  present,     ///< a value exists (an empty value is still present)
  dropped,     ///< removed on purpose (filter false, dropped input)
  failed,      ///< the producer itself failed on this Entity
  suppressed,  ///< an input or a sibling failure prevented the work
};

/// Lower-case name of an outcome, as printed in errors and reports.
std::string_view to_string(Outcome outcome);

/// Why a root output is not present: its outcome and the cause that travelled downstream.
/// Where a failure was decided: the Grain whose UDF result or physical failure produced the
/// cause that an OutputIssue carries.
struct IssueOrigin {
  std::string call;     ///< the Call, printed as UDF name and Call index, e.g. "OcrPage#2"
  int call_index = -1;  ///< the index in that name
  /// The deciding Grain's Entity key: its ordinals from the source row, e.g. "7/3" is child
  /// 3 (zero-based, in expansion order) of source row 7, "7/3/0" the first child of that.
  std::string entity;
  std::uint32_t attempts = 0;  ///< physical attempts of that Grain, the deciding one included

  friend bool operator==(const IssueOrigin&, const IssueOrigin&) = default;
};

struct OutputIssue {
  Outcome outcome = Outcome::dropped;
  std::string cause;  ///< empty when no cause was recorded (e.g. a plain drop)
  /// Where the cause was decided; empty for drops and for causes no Grain produced (e.g. a
  /// reduce member whose value was dropped).
  std::optional<IssueOrigin> origin{};

  /// Compares outcome and cause only: those are identical for every schedule, while the
  /// attempt count in `origin` may depend on how retries split batches.
  friend bool operator==(const OutputIssue& a, const OutputIssue& b) {
    return a.outcome == b.outcome && a.cause == b.cause;
  }
};

/// A per-row data failure returned by a UDF: fails only this Grain's outputs.
struct RecordFailure {
  std::string message;
};

/// A per-row data failure that also stops the undispatched siblings of this Grain's parent
/// for the same Call (DESIGN 5, typed failures).
struct GroupFailure {
  std::string message;
};

/// Thrown by a UDF (or by the runtime on a timeout) to model a lost actor: the actor is
/// replaced by a fresh instance and its Grains replay at a higher generation.
class ActorLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One element of a UDF result: either a value or a typed per-row failure.
// Not a std::variant: GCC 12 reports a false -Wmaybe-uninitialized at -O2 for the natural
// `out.push_back(value)` into a std::vector of variants holding strings.
template <class R>
class Row {
 public:
  Row(R value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Row(RecordFailure failure)                  // NOLINT
      : kind_(Kind::record_failure), message_(std::move(failure.message)) {}
  Row(GroupFailure failure)  // NOLINT
      : kind_(Kind::group_failure), message_(std::move(failure.message)) {}

  /// True when the row holds a value.
  bool ok() const { return kind_ == Kind::ok; }
  /// The value; throws std::logic_error when the row holds a failure.
  const R& value() const {
    if (!ok()) throw std::logic_error("Row::value() called on a failed row: " + message_);
    return *value_;
  }
  /// True when the row holds a GroupFailure.
  bool is_group_failure() const { return kind_ == Kind::group_failure; }
  /// The failure message; empty when ok().
  const std::string& message() const { return message_; }

 private:
  enum class Kind : std::uint8_t { ok, record_failure, group_failure };
  std::optional<R> value_;
  Kind kind_ = Kind::ok;
  std::string message_;
};

/// The result for one root row and one output Port: a value or an OutputIssue.
template <class T>
class Output {
 public:
  /// A present output.
  explicit Output(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  /// An output that is not present.
  explicit Output(OutputIssue issue) : state_(std::in_place_index<1>, std::move(issue)) {}

  /// True when the output is present.
  bool ok() const { return state_.index() == 0; }
  /// The value; throws std::logic_error naming the outcome when the output is not present.
  const T& value() const {
    if (!ok()) {
      throw std::logic_error("Output::value() called on a " +
                             std::string(to_string(issue().outcome)) +
                             " output; check ok() first (cause: " + issue().cause + ")");
    }
    return std::get<0>(state_);
  }
  /// Moves the value out; same precondition as value().
  T take() {
    (void)value();
    return std::move(std::get<0>(state_));
  }
  /// The issue; throws std::logic_error when the output is present.
  const OutputIssue& issue() const {
    if (ok()) throw std::logic_error("Output::issue() called on a present output");
    return std::get<1>(state_);
  }

  friend bool operator==(const Output& a, const Output& b) { return a.state_ == b.state_; }

 private:
  std::variant<T, OutputIssue> state_;
};

}  // namespace rayorch
