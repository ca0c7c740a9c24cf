// What a Call does when a UDF throws (a physical attempt failure).
#pragma once

#include <cstdint>

namespace rayorch {

/// Recovery from physical attempt failures of one Call (DESIGN 5). Data failures
/// (RecordFailure, GroupFailure) are outcomes, not attempts, and never reach the policy.
class RecoveryPolicy {
 public:
  enum class Kind : std::uint8_t { abort, retry_batch, retry_tail, isolate_tail };

  /// The default: the first failure aborts the run.
  static RecoveryPolicy abort() { return RecoveryPolicy(Kind::abort, 0); }
  /// Requeues the exact batch ahead of ready work, at most `n` times per batch.
  static RecoveryPolicy retry_batch(int n) { return RecoveryPolicy(Kind::retry_batch, n); }
  /// Requeues the exact batch behind ready work, at most `n` times per batch.
  static RecoveryPolicy retry_tail(int n) { return RecoveryPolicy(Kind::retry_tail, n); }
  /// One tail retry, then binary splitting until the poisoned Grain is isolated and FAILED.
  static RecoveryPolicy isolate_tail() { return RecoveryPolicy(Kind::isolate_tail, 1); }

  RecoveryPolicy() = default;
  /// Which policy this is.
  Kind kind() const { return kind_; }
  /// The retry budget per batch (1 for isolate_tail: its single tail retry).
  int retries() const { return retries_; }

  friend bool operator==(const RecoveryPolicy&, const RecoveryPolicy&) = default;

 private:
  RecoveryPolicy(Kind kind, int retries) : kind_(kind), retries_(retries) {}
  Kind kind_ = Kind::abort;
  int retries_ = 0;
};

}  // namespace rayorch
