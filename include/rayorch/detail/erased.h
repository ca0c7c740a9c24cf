// Type-erased values and UDF invocations: the one seam between typed user code and the
// untyped program, runtime and execution layers. A future codec for values that cross
// processes plugs in here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rayorch/detail/row_failure.h"

namespace rayorch::detail {

/// A coarse block of values: one output column of an RPC, one source column, one group, the
/// elements of expanded lists. Immutable once made; shared by the store and by attempts.
class Block {
 public:
  virtual ~Block() = default;
  /// The address of row `row`'s value; null where that row holds a failure.
  virtual const void* at(std::size_t row) const = 0;
  /// Number of rows.
  virtual std::size_t size() const = 0;
};

/// Shared, immutable ownership of a block.
using BlockRef = std::shared_ptr<const Block>;

/// A block owning a vector of values.
template <class T>
class VectorBlock final : public Block {
 public:
  explicit VectorBlock(std::vector<T> v) : values(std::move(v)) {}
  const void* at(std::size_t row) const override { return &values[row]; }
  std::size_t size() const override { return values.size(); }
  std::vector<T> values;
};

/// A block of bools with addressable elements (std::vector<bool> has none).
class BoolBlock final : public Block {
 public:
  explicit BoolBlock(const std::vector<bool>& v)
      : values(std::make_unique<bool[]>(v.size())), size_(v.size()) {
    for (std::size_t i = 0; i < size_; ++i) values[i] = v[i];
  }
  const void* at(std::size_t row) const override { return &values[row]; }
  std::size_t size() const override { return size_; }
  std::unique_ptr<bool[]> values;

 private:
  std::size_t size_;
};

/// Rows that live in other blocks: a slice of a source column, the elements of expanded
/// lists. Holds the blocks it points into.
class ViewBlock final : public Block {
 public:
  ViewBlock(std::vector<const void*> rows, std::vector<BlockRef> keep)
      : rows_(std::move(rows)), keep_(std::move(keep)) {}
  const void* at(std::size_t row) const override { return rows_[row]; }
  std::size_t size() const override { return rows_.size(); }

 private:
  std::vector<const void*> rows_;
  std::vector<BlockRef> keep_;
};

/// Element access on a list-typed value, for expand.
struct ListOps {
  std::size_t (*size)(const void* list) = nullptr;
  const void* (*at)(const void* list, std::size_t i) = nullptr;
};

/// Builds one Group<T> from member value addresses; returns the block holding it and sets
/// `*group` to the Group's address. `keep_alive` owns the members' storage.
using GroupMaker = BlockRef (*)(std::vector<const void*> members,
                                std::shared_ptr<const void> keep_alive, const void** group);

/// The type-erased result of one RPC.
struct RpcOutput {
  std::vector<BlockRef> blocks;                  ///< one per output Port
  std::vector<std::vector<const void*>> values;  ///< [output][row]; null where the row failed
  std::vector<RowFailure> failures;              ///< failed rows, in ascending row order
  std::string contract_error;                    ///< non-empty: the result broke the contract
};

/// One UDF instance owned by an actor.
class UdfInstance {
 public:
  virtual ~UdfInstance() = default;
};

/// Holds a user UDF object.
template <class U>
class UdfBox final : public UdfInstance {
 public:
  template <class... A>
  explicit UdfBox(A&&... args) : udf(std::forward<A>(args)...) {}
  U udf;
};

/// One input column of an RPC: `size` value addresses.
struct ColumnInput {
  const void* const* data = nullptr;
  std::size_t size = 0;
};

/// Runs one RPC of a Call: the UDF's `run` on the input columns plus the Call's captured
/// static arguments. Exceptions thrown by the UDF propagate to the caller.
using Invoker = std::function<RpcOutput(UdfInstance&, std::span<const ColumnInput>)>;

/// Builds a fresh UDF instance from the Module's captured constructor arguments.
using Factory = std::function<std::unique_ptr<UdfInstance>()>;

/// Demangled, readable name of a C++ type (for messages and explain).
std::string demangle(const char* mangled);

/// A type name without its namespace qualifiers ("Ocr" for "app::Ocr").
std::string short_type_name(std::string name);

/// Readable name of the exception currently being handled ("std::runtime_error").
std::string current_exception_type();

/// An error raised by a UDF written in another language (the Python front end): the cause
/// of the failure reads "type: message" with the foreign type name ("ValueError: boom"), as
/// a C++ exception reads with its C++ type name. A foreign traceback, when known, follows that
/// first line in the cause text, so the UDF's own frames survive every backend.
class ForeignError : public std::runtime_error {
 public:
  ForeignError(std::string type, const std::string& message, std::string traceback = {})
      : std::runtime_error(message), type_(std::move(type)), traceback_(std::move(traceback)) {}
  /// The foreign exception's type name, e.g. "ValueError".
  const std::string& type() const { return type_; }
  /// The foreign exception's formatted traceback ("Traceback (most recent call last):\n...",
  /// ending with a newline), or empty.
  const std::string& traceback() const { return traceback_; }

 private:
  std::string type_;
  std::string traceback_;
};

}  // namespace rayorch::detail
