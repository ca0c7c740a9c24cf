// The Ray backend. See ray_pools.h.
#include "ray_pools.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actor_block_cache.h"
#include "py_values.h"
#include <fmt/format.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "rayorch/errors.h"

#include "execution/invoke.h"
#include "runtime/protocol_codec.h"

namespace nb = nanobind;

namespace rayorch::python {
namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------
// Bytes beside the protocol: block ids and group inputs (little-endian, like protocol_codec)
// ---------------------------------------------------------------------------------------

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffU));
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffU));
}

class Reader {
 public:
  Reader(const char* data, std::size_t size) : data_(data), size_(size) {}
  std::uint64_t u(int bytes) {
    if (at_ + static_cast<std::size_t>(bytes) > size_)
      throw rd::ProtocolError("truncated Ray task bytes");
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[at_++])) << (8 * i);
    return v;
  }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u(4)); }
  std::uint64_t u64() { return u(8); }
  bool done() const { return at_ == size_; }

 private:
  const char* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

std::string encode_groups(const std::vector<rd::GroupInput>& groups) {
  std::string out;
  put_u32(out, static_cast<std::uint32_t>(groups.size()));
  for (const rd::GroupInput& g : groups) {
    put_u32(out, g.input);
    put_u32(out, g.row);
    put_u32(out, static_cast<std::uint32_t>(g.members.size()));
    for (const rd::Binding& m : g.members) {
      put_u64(out, m.block);
      put_u32(out, m.row);
    }
  }
  return out;
}

std::vector<rd::GroupInput> decode_groups(const char* data, std::size_t size) {
  Reader r(data, size);
  std::vector<rd::GroupInput> groups(r.u32());
  for (rd::GroupInput& g : groups) {
    g.input = r.u32();
    g.row = r.u32();
    g.members.resize(r.u32());
    for (rd::Binding& m : g.members) {
      m.block = r.u64();
      m.row = r.u32();
    }
  }
  if (!r.done()) throw rd::ProtocolError("trailing bytes after the group inputs");
  return groups;
}

std::string bytes_of(nb::handle b) {
  char* data = nullptr;
  Py_ssize_t n = 0;
  if (PyBytes_AsStringAndSize(b.ptr(), &data, &n) != 0) throw nb::python_error();
  return std::string(data, static_cast<std::size_t>(n));
}

/// A Python list of the block's values (None where a row failed).
PyObject* block_to_list(const rd::Block& block) {
  const std::size_t n = block.size();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
  if (list == nullptr) throw_foreign();
  for (std::size_t i = 0; i < n; ++i) {
    const void* a = block.at(i);
    PyObject* o = a != nullptr ? object_at(a) : Py_None;
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), Py_NewRef(o));
  }
  return list;
}

/// A block over a Python sequence of values (the caller holds the GIL).
std::shared_ptr<PyBlock> list_to_block(PyObject* seq) {
  PyObject* fast = PySequence_Fast(seq, "a Ray block must be a list of values");
  if (fast == nullptr) throw_foreign();
  const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast));
  PyObject** items = PySequence_Fast_ITEMS(fast);
  auto block = std::make_shared<PyBlock>();
  block->rows.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    block->rows[i].obj = Py_NewRef(items[i]);
    block->rows[i].truth = items[i] == Py_True;
  }
  Py_DECREF(fast);
  return block;
}

/// A block whose values live in Ray's object store: the driver holds its ObjectRef only.
class RemoteBlock final : public rd::Block {
 public:
  RemoteBlock(rd::BlockId id, Ref ref) : id_(id), ref_(std::move(ref)) {}
  const void* at(std::size_t) const override { return nullptr; }  // never read in the driver
  std::size_t size() const override { return 0; }
  rd::BlockId id() const { return id_; }
  PyObject* ref() const { return ref_.get(); }

 private:
  rd::BlockId id_;
  Ref ref_;
};

/// Calls `backend.<method>(args...)` under the GIL the caller holds; throws on a Python error.
template <class... A>
nb::object call(const nb::object& backend, const char* method, A&&... args) {
  return backend.attr(method)(std::forward<A>(args)...);
}

// ---------------------------------------------------------------------------------------
// The driver's view of a run's blocks
// ---------------------------------------------------------------------------------------

class RayStore final : public rd::BlockStore {
 public:
  RayStore(nb::object backend, std::shared_ptr<ActorBlockCache> cache)
      : backend_(std::move(backend)), cache_(std::move(cache)) {}
  RayStore(const RayStore&) = delete;
  RayStore& operator=(const RayStore&) = delete;
  ~RayStore() override {
    cache_->released_all();  // block ids mean nothing once the run's store is gone
    if (!python_alive()) {
      backend_.release();  // the interpreter is going: leak rather than touch it
      return;
    }
    Gil gil;  // the entries hold ObjectRefs
    entries_.clear();
    backend_ = nb::object();
  }

  bool put(rd::BlockId id, rd::BlockRef block) override {
    Entry& e = entries_[id];
    if (e.remote || e.group) return false;
    cache_->released(id);  // no actor may hold other contents under this id
    if (const auto* remote = dynamic_cast<const RemoteBlock*>(block.get())) {
      (void)remote;
      e.remote = std::move(block);
      return true;
    }
    // A block the driver made (a source slice): its values go to the object store once, and
    // the driver keeps its own view to materialise outputs that are source values.
    Gil gil;
    nb::object list = nb::steal(block_to_list(*block));
    nb::object ref = call(backend_, "put", list);
    e.remote = std::make_shared<RemoteBlock>(id, Ref::borrow(ref.ptr()));
    e.local = std::move(block);
    return true;
  }

  const void* resolve(const rd::Binding& b) override {
    Entry& e = entry(b.block);
    if (e.group) {
      if (!e.fetched) {
        Gil gil;
        std::vector<std::shared_ptr<PyBlock>> fetched(e.member_blocks.size());
        PyObject* list = PyList_New(static_cast<Py_ssize_t>(e.members.size()));
        if (list == nullptr) throw_foreign();
        auto block = std::make_shared<PyBlock>();
        block->rows.push_back(PyValue{false, list, nullptr, 0});
        for (std::size_t i = 0; i < e.members.size(); ++i) {
          const std::size_t k = member_index(e, e.members[i].block);
          if (!fetched[k]) fetched[k] = fetch(*e.member_blocks[k]);
          PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i),
                          Py_NewRef(fetched[k]->rows.at(e.members[i].row).obj));
        }
        e.fetched = std::move(block);
      }
      return e.fetched->at(0);
    }
    if (e.local) return e.local->at(b.row);
    if (!e.fetched) {
      Gil gil;
      e.fetched = fetch(*e.remote);
    }
    return e.fetched->at(b.row);
  }

  bool fetches() const override { return true; }

  void prefetch(const std::vector<rd::Binding>& values) override {
    // The distinct remote blocks not fetched yet (groups: their members' blocks).
    std::vector<Entry*> targets;
    std::vector<const rd::BlockRef*> blocks;
    auto want = [&](Entry* e, const rd::BlockRef* b) {
      if (std::find(targets.begin(), targets.end(), e) != targets.end()) return;
      targets.push_back(e);
      blocks.push_back(b);
    };
    for (const rd::Binding& v : values) {
      auto it = entries_.find(v.block);
      if (it == entries_.end()) continue;
      Entry& e = it->second;
      if (e.fetched || e.local) continue;
      if (!e.group) want(&e, &e.remote);
    }
    if (blocks.size() < 2) return;
    Gil gil;
    nb::list refs;
    for (const rd::BlockRef* b : blocks)
      refs.append(nb::handle(static_cast<const RemoteBlock&>(**b).ref()));
    nb::object got = call(backend_, "get", refs);
    for (std::size_t i = 0; i < targets.size(); ++i)
      targets[i]->fetched = list_to_block(PyList_GET_ITEM(got.ptr(), static_cast<Py_ssize_t>(i)));
  }

  rd::ResolvedInputs resolve_inputs(const rd::Invocation& inv) const override {
    rd::ResolvedInputs r;
    std::vector<rd::BlockId> seen;
    auto add = [&](rd::BlockId id) {
      for (rd::BlockId s : seen)
        if (s == id) return;
      seen.push_back(id);
      r.keep_alive.push_back(entry(id).remote);
    };
    for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
      for (std::size_t row = 0; row < inv.inputs[i].size(); ++row) {
        const rd::Binding& b = inv.inputs[i][row];
        const Entry& e = entry(b.block);
        if (!e.group) {
          add(b.block);
          continue;
        }
        r.groups.push_back(rd::GroupInput{static_cast<std::uint32_t>(i),
                                          static_cast<std::uint32_t>(row), e.members});
        for (const rd::BlockRef& m : e.member_blocks) {
          const rd::BlockId id = static_cast<const RemoteBlock&>(*m).id();
          if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
          seen.push_back(id);
          r.keep_alive.push_back(m);
        }
      }
    }
    return r;
  }

  void apply(const std::vector<rd::StoreCommand>& commands) override {
    Gil gil;  // a release drops ObjectRefs
    for (const rd::StoreCommand& c : commands) {
      if (c.kind == rd::StoreCommand::Kind::compose_group) {
        Entry& e = entries_[c.block];
        if (e.remote || e.group) continue;
        e.group = true;
        e.members = c.members;
        // The group holds its members' blocks: the engine may release them right away.
        for (const rd::Binding& m : c.members) {
          if (std::any_of(e.member_blocks.begin(), e.member_blocks.end(), [&](const auto& b) {
                return static_cast<const RemoteBlock&>(*b).id() == m.block;
              }))
            continue;
          e.member_blocks.push_back(entry(m.block).remote);
          ++groups_holding_[m.block];
        }
      } else {
        release(c.block);
      }
    }
  }

  void release_batch(std::size_t batch) override {
    Gil gil;
    std::vector<rd::BlockId> ids;
    for (const auto& [id, e] : entries_)
      if (rd::block_batch(id) == batch) ids.push_back(id);
    for (rd::BlockId id : ids) release(id);
  }

 private:
  struct Entry {
    rd::BlockRef remote;  // a RemoteBlock; null for a group
    rd::BlockRef local;   // a source slice: the driver's own view of it
    bool group = false;
    std::vector<rd::Binding> members;
    std::vector<rd::BlockRef> member_blocks;  // a group: its members' distinct blocks
    std::shared_ptr<PyBlock> fetched;         // fetched or composed to materialise outputs
  };

  // Drops block `id` from the store (the caller holds the GIL). The actors may drop their
  // copies only once nothing can read the block again: a block that groups hold as a member
  // is read through them, so its copies go with the last of those groups. With that, a
  // block released to the actor cache is never read again in this run, which its
  // invariants rely on (actor_block_cache.h).
  void release(rd::BlockId id) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    std::vector<rd::BlockId> members;
    if (it->second.group) {
      for (const rd::BlockRef& m : it->second.member_blocks)
        members.push_back(static_cast<const RemoteBlock&>(*m).id());
    }
    entries_.erase(it);
    if (groups_holding_.count(id) != 0) {
      released_members_.insert(id);  // its groups still read it
    } else {
      cache_->released(id);
    }
    for (rd::BlockId m : members) {
      auto held = groups_holding_.find(m);
      if (held == groups_holding_.end() || --held->second > 0) continue;
      groups_holding_.erase(held);
      if (released_members_.erase(m) != 0) cache_->released(m);
    }
  }

  static std::size_t member_index(const Entry& e, rd::BlockId id) {
    for (std::size_t k = 0; k < e.member_blocks.size(); ++k)
      if (static_cast<const RemoteBlock&>(*e.member_blocks[k]).id() == id) return k;
    throw std::logic_error("internal error: a group member's block is not held by the group");
  }

  // Fetches a block's values from the object store (the caller holds the GIL).
  std::shared_ptr<PyBlock> fetch(const rd::Block& remote) {
    nb::object values =
        call(backend_, "get", nb::handle(static_cast<const RemoteBlock&>(remote).ref()));
    return list_to_block(values.ptr());
  }

  const Entry& entry(rd::BlockId id) const {
    auto it = entries_.find(id);
    if (it == entries_.end() || (!it->second.remote && !it->second.group)) {
      throw std::logic_error(fmt::format(
          "internal error: block {:#x} is not in the Ray store (released too early?)", id));
    }
    return it->second;
  }
  Entry& entry(rd::BlockId id) { return const_cast<Entry&>(std::as_const(*this).entry(id)); }

  nb::object backend_;
  std::shared_ptr<ActorBlockCache> cache_;
  std::unordered_map<rd::BlockId, Entry> entries_;
  // Per block that groups hold as a member: how many groups; and the members the engine
  // released already, whose actor copies go with their last group.
  std::unordered_map<rd::BlockId, int> groups_holding_;
  std::unordered_set<rd::BlockId> released_members_;
};

// ---------------------------------------------------------------------------------------
// The pools
// ---------------------------------------------------------------------------------------

/// Wall-clock seconds (an actor's clock) as a point of this process's steady clock. Both run
/// on one machine or on machines whose clocks agree closely enough for a timeline.
Clock::time_point from_wall(double seconds) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return Clock::now() -
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(now - seconds));
}

class RayPools final : public rd::WorkerPools {
 public:
  RayPools(std::shared_ptr<const rd::RuntimePlan> plan, nb::object backend)
      : plan_(std::move(plan)), backend_(std::move(backend)) {
    Gil gil;
    actors_ = nb::cast<std::vector<int>>(call(backend_, "sizes"));
    const auto depths = nb::cast<std::vector<int>>(call(backend_, "depths"));
    if (actors_.size() != plan_->pools.size() || depths.size() != actors_.size()) {
      throw ExecutionError(fmt::format("the Ray backend started {} pools for a plan with {}",
                                       actors_.size(), plan_->pools.size()));
    }
    for (std::size_t p = 0; p < actors_.size(); ++p) {
      const int lanes = actors_[p] * std::max(depths[p], 1);
      sizes_.push_back(lanes);
      epochs_.emplace_back(static_cast<std::size_t>(lanes), 0);
      actor_epochs_.emplace_back(static_cast<std::size_t>(actors_[p]), 0);
      total_ += static_cast<std::size_t>(lanes);
    }
    cache_ = std::make_shared<ActorBlockCache>(actors_);
  }
  RayPools(const RayPools&) = delete;
  RayPools& operator=(const RayPools&) = delete;
  ~RayPools() override {
    stop();
    if (!python_alive()) {
      backend_.release();  // the interpreter is going: leak rather than touch it
      return;
    }
    Gil gil;
    pending_.clear();
    backend_ = nb::object();
  }

  std::unique_ptr<rd::BlockStore> make_store(std::shared_ptr<const rd::RuntimePlan>) override {
    Gil gil;
    return std::make_unique<RayStore>(backend_, cache_);
  }
  std::vector<int> sizes() const override { return sizes_; }
  std::vector<int> actors() const override { return actors_; }
  // Lane k of actor a is worker k * actors + a: the driver, which takes idle workers in
  // order, gives every actor a call before it queues a second one at any.
  int actor_of(int pool, int slot) const override { return slot % actors_[pool]; }
  std::size_t max_outstanding() const override { return total_; }

  void submit(rd::WorkerTask task) override {
    Pending p;
    p.run = task.run;
    p.pool = task.pool;
    p.slot = task.slot;
    p.actor = actor_of(task.pool, task.slot);
    p.epoch = epochs_[task.pool][task.slot];
    p.actor_epoch = actor_epochs_[task.pool][p.actor];
    p.submitted = Clock::now();
    // The blocks the actor holds already go by id; the others travel as ObjectRefs.
    std::vector<rd::BlockId> held;
    std::vector<const RemoteBlock*> fresh;
    for (const rd::BlockRef& b : task.inputs.keep_alive) {
      const auto& remote = static_cast<const RemoteBlock&>(*b);
      if (cache_->holds(task.pool, p.actor, remote.id())) {
        held.push_back(remote.id());
      } else {
        fresh.push_back(&remote);
        p.fresh.push_back(remote.id());
      }
    }
    p.evicted = cache_->take_evictions(task.pool, p.actor);
    p.sends = cache_->sending(p.fresh);
    std::size_t returns = 1;
    for (const rd::OutputSlot& s : task.invocation.outputs) returns += s.child_block != 0 ? 2 : 1;
    // One bytes object per RPC: [u32 n][invocation], then three id lists, each a u32 count
    // and u64 ids: blocks to drop, blocks held, blocks sent (in argument order); then the
    // group inputs.
    const std::string inv = rd::encode(task.invocation);
    std::string bytes;
    put_u32(bytes, static_cast<std::uint32_t>(inv.size()));
    bytes += inv;
    for (const std::vector<rd::BlockId>* ids : {&p.evicted, &held, &p.fresh}) {
      put_u32(bytes, static_cast<std::uint32_t>(ids->size()));
      for (rd::BlockId id : *ids) put_u64(bytes, id);
    }
    bytes += encode_groups(task.inputs.groups);
    const std::uint64_t token = ++tokens_;
    {
      Gil gil;
      nb::object refs = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(fresh.size())));
      for (std::size_t i = 0; i < fresh.size(); ++i)
        PyTuple_SET_ITEM(refs.ptr(), static_cast<Py_ssize_t>(i), Py_NewRef(fresh[i]->ref()));
      nb::object out = call(backend_, "submit", task.pool, p.actor, token, returns,
                            nb::bytes(bytes.data(), bytes.size()), refs);
      PyObject* fast = PySequence_Fast(out.ptr(), "submit() must return the ObjectRefs");
      if (fast == nullptr) throw nb::python_error();
      const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast));
      for (std::size_t i = 1; i < n; ++i)
        p.blocks.push_back(Ref::borrow(PySequence_Fast_GET_ITEM(fast, static_cast<Py_ssize_t>(i))));
      Py_DECREF(fast);
    }
    p.invocation = std::move(task.invocation);
    pending_.emplace(token, std::move(p));
  }

  void wait(Clock::time_point deadline, std::vector<rd::WorkerResult>& out) override {
    if (pending_.empty()) return;
    const double timeout =
        std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
    Gil gil;
    nb::object done = call(backend_, "wait", timeout);
    for (nb::handle item : done) {
      auto t = nb::borrow<nb::tuple>(item);
      const auto token = nb::cast<std::uint64_t>(t[0]);
      auto it = pending_.find(token);
      if (it == pending_.end()) continue;
      Pending p = std::move(it->second);
      pending_.erase(it);
      out.push_back(result(std::move(p), nb::cast<bool>(t[1]), t[2]));
    }
  }

  void replace(int pool, int slot) override {
    ++epochs_[pool][slot];
    const int actor = actor_of(pool, slot);
    // Calls queued at the same actor die with it and come back as lost (it was replaced
    // already, so they replace nothing). No pool with a timeout queues calls, though
    // (_ray_backend.depths): a queued call's wait would count against its timeout.
    ++actor_epochs_[pool][actor];
    cache_->reset(pool, actor);
    Gil gil;
    try {
      call(backend_, "replace", pool, actor);
    } catch (const nb::python_error& e) {
      throw ExecutionError(fmt::format("replacing a Ray actor of pool {} failed: {}",
                                       plan_->pools[pool].name, e.what()));
    }
  }

  void stop() noexcept override {
    if (stopped_ || !python_alive()) return;
    stopped_ = true;
    Gil gil;
    pending_.clear();
    try {
      call(backend_, "stop");
    } catch (const nb::python_error& e) {
      PySys_WriteStderr("rayorch: stopping the Ray actors: %s\n", e.what());
    } catch (...) {
      // Stopping never throws; the actors go with the cluster or the driver.
    }
  }

 private:
  struct Pending {
    std::uint64_t run = 0;
    int pool = -1;
    int slot = -1;
    int actor = -1;                 // the actor of the worker (pool, slot)
    std::uint64_t epoch = 0;        // the worker's incarnation at submission
    std::uint64_t actor_epoch = 0;  // the actor's incarnation at submission
    rd::Invocation invocation;
    std::vector<Ref> blocks;  // the ObjectRefs of the output blocks, in slot order
    Clock::time_point submitted;
    std::vector<rd::BlockId> fresh;            // input blocks this RPC carried to the actor
    std::vector<ActorBlockCache::Send> sends;  // the same, as the cache tracks them
    std::vector<rd::BlockId> evicted;          // blocks this RPC told the actor to drop
  };

  // Builds the result of one finished RPC (the caller holds the GIL).
  rd::WorkerResult result(Pending p, bool ok, nb::handle value) {
    rd::WorkerResult r;
    r.run = p.run;
    r.pool = p.pool;
    r.slot = p.slot;
    r.current = p.epoch == epochs_[p.pool][p.slot];
    rd::Attempt& a = r.attempt;
    a.report.invocation = p.invocation.id;
    a.report.input_batch = p.invocation.input_batch;
    a.start = p.submitted;
    a.end = Clock::now();
    // False when the actor that ran the call was replaced after it was sent (another of its
    // queued calls reported the loss first): nothing the call did concerns its successor.
    const bool same_actor = p.actor_epoch == actor_epochs_[p.pool][p.actor];
    // ok: the actor ran the RPC, so it dropped the evicted blocks and keeps the ones sent.
    cache_->arrived(p.pool, p.actor, p.sends, r.current && ok && same_actor);
    if (!r.current) return r;  // the generation fence rejects it; its blocks go with `p`
    if (ok) {
      auto status = nb::borrow<nb::tuple>(value);
      const int kind = nb::cast<int>(status[0]);
      a.start = from_wall(nb::cast<double>(status[2]));
      a.end = from_wall(nb::cast<double>(status[3]));
      switch (kind) {
        case 0: {
          a.kind = rd::Attempt::Kind::ok;
          a.report = rd::decode_report(bytes_of(status[1]));
          std::size_t j = 0;
          for (const rd::OutputSlot& s : p.invocation.outputs) {
            a.blocks.emplace_back(s.block,
                                  std::make_shared<RemoteBlock>(s.block, std::move(p.blocks[j++])));
            if (s.child_block != 0) {
              a.blocks.emplace_back(s.child_block, std::make_shared<RemoteBlock>(
                                                       s.child_block, std::move(p.blocks[j++])));
            }
          }
          break;
        }
        case 1:
          a.kind = rd::Attempt::Kind::failed;
          a.error = nb::cast<std::string>(status[1]);
          break;
        default:  // the UDF raised ActorLost: the actor rebuilt its UDF instance (or could not)
          a.kind = rd::Attempt::Kind::lost;
          a.error = nb::cast<std::string>(status[1]);
          r.rebuilt = true;
          if (kind == 3)
            r.fatal = "replacing a lost actor failed: " + nb::cast<std::string>(status[4]);
          break;
      }
      return r;
    }
    auto error = nb::borrow<nb::tuple>(value);
    const std::string what = nb::cast<std::string>(error[0]);
    const std::string message = nb::cast<std::string>(error[1]);
    if (what == "lost") {
      // The actor (or its node) is gone: a fresh actor takes its slot, the Grains replay.
      a.kind = rd::Attempt::Kind::lost;
      a.error = message;
      if (same_actor) {
        r.rebuilt = true;
        ++actor_epochs_[p.pool][p.actor];
        cache_->reset(p.pool, p.actor);
        try {
          call(backend_, "replace", p.pool, p.actor, true);  // lost: start it on another node
        } catch (const nb::python_error& e) {
          r.fatal = fmt::format("replacing a lost Ray actor of pool {} failed: {}",
                                plan_->pools[p.pool].name, e.what());
        }
      } else {
        r.loss_counted = true;
      }
    } else if (same_actor) {
      // The call did not finish in the actor: the blocks it was to drop may still be there.
      cache_->requeue_evictions(p.pool, p.actor, p.evicted);
    }
    if (what == "lost") {
      // handled above
    } else if (what == "block_lost") {
      // An input block was lost with its node and Ray could not rebuild it: the Grains that
      // read it fail with a cause naming the loss (they are not replayed).
      a.kind = rd::Attempt::Kind::ok;
      a.report = lost_input_report(p.invocation, message);
    } else {
      a.kind = rd::Attempt::Kind::failed;
      a.error = message;
    }
    return r;
  }

  static rd::Report lost_input_report(const rd::Invocation& inv, const std::string& message) {
    rd::Report rep;
    rep.invocation = inv.id;
    rep.input_batch = inv.input_batch;
    const std::size_t rows = inv.grains.size();
    for (std::size_t row = 0; row < rows; ++row) {
      rep.failures.push_back(rd::RowFailure{static_cast<std::uint32_t>(row),
                                            rd::RowKind::record_failure,
                                            "rayorch::BlockLost: " + message});
    }
    rep.outputs.resize(inv.outputs.size());
    for (std::size_t k = 0; k < inv.outputs.size(); ++k) {
      if (inv.outputs[k].child_block != 0) rep.outputs[k].lengths.assign(rows, 0);
      if (inv.outputs[k].truth) rep.outputs[k].truth.assign(rows, 0);
    }
    return rep;
  }

  std::shared_ptr<const rd::RuntimePlan> plan_;
  nb::object backend_;
  std::vector<int> actors_;  // per pool: its Ray actors
  std::vector<int> sizes_;   // per pool: its workers (actors x calls in flight per actor)
  std::size_t total_ = 0;
  std::vector<std::vector<std::uint64_t>> epochs_;        // per worker: its incarnation
  std::vector<std::vector<std::uint64_t>> actor_epochs_;  // per actor: its incarnation
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t tokens_ = 0;
  bool stopped_ = false;
  std::shared_ptr<ActorBlockCache> cache_;  // shared with the run's store
};

}  // namespace

std::unique_ptr<rd::WorkerPools> make_ray_pools(std::shared_ptr<const rd::RuntimePlan> plan,
                                                nb::object backend) {
  return std::make_unique<RayPools>(std::move(plan), std::move(backend));
}

// ---------------------------------------------------------------------------------------
// The actor side
// ---------------------------------------------------------------------------------------

RayWorker::RayWorker(std::shared_ptr<const rd::RuntimePlan> plan, int pool)
    : plan_(std::move(plan)), pool_(pool) {
  if (pool < 0 || static_cast<std::size_t>(pool) >= plan_->pools.size())
    throw ExecutionError(fmt::format("no pool {} in this program", pool));
  std::string error;
  instance_ = rd::build_instance(*plan_, pool_, error);
  if (!instance_) throw ExecutionError(error);
}

nb::tuple RayWorker::run(nb::bytes task, nb::args blocks) {
  const std::string bytes = bytes_of(task);
  Reader reader(bytes.data(), bytes.size());
  const std::uint32_t inv_size = reader.u32();
  if (bytes.size() < 4 + static_cast<std::size_t>(inv_size))
    throw rd::ProtocolError("truncated Ray task bytes");
  const rd::Invocation inv = rd::decode_invocation(bytes.substr(4, inv_size));
  Reader rest(bytes.data() + 4 + inv_size, bytes.size() - 4 - inv_size);
  std::size_t groups_at = 4 + inv_size;
  auto ids = [&] {
    std::vector<rd::BlockId> out(rest.u32());
    for (rd::BlockId& id : out) id = rest.u64();
    groups_at += 4 + 8 * out.size();
    return out;
  };
  const std::vector<rd::BlockId> evicted = ids();
  const std::vector<rd::BlockId> held = ids();
  const std::vector<rd::BlockId> sent = ids();
  if (sent.size() != blocks.size())
    throw rd::ProtocolError(fmt::format("{} block ids for {} blocks", sent.size(), blocks.size()));
  for (rd::BlockId id : evicted) cache_.erase(id);
  std::unordered_map<rd::BlockId, std::shared_ptr<PyBlock>> in;
  for (rd::BlockId id : held) {
    auto it = cache_.find(id);
    if (it == cache_.end())
      throw rd::ProtocolError(fmt::format("block {:#x} is not held by this actor", id));
    in.emplace(id, it->second);
  }
  std::size_t next_sent = 0;
  for (nb::handle b : blocks) {
    std::shared_ptr<PyBlock> block = list_to_block(b.ptr());
    cache_[sent[next_sent]] = block;
    in.emplace(sent[next_sent++], std::move(block));
  }
  auto block = [&](rd::BlockId id) -> const PyBlock& {
    auto it = in.find(id);
    if (it == in.end()) throw rd::ProtocolError(fmt::format("block {:#x} was not sent", id));
    return *it->second;
  };
  const std::vector<rd::GroupInput> group_inputs =
      decode_groups(bytes.data() + groups_at, bytes.size() - groups_at);
  rd::ResolvedInputs resolved;
  resolved.columns.resize(inv.inputs.size());
  std::vector<std::vector<char>> is_group(inv.inputs.size());
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) is_group[i].assign(inv.inputs[i].size(), 0);
  for (const rd::GroupInput& g : group_inputs) is_group.at(g.input).at(g.row) = 1;
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    for (std::size_t row = 0; row < inv.inputs[i].size(); ++row) {
      const rd::Binding& b = inv.inputs[i][row];
      if (is_group[i][row]) {
        resolved.columns[i].push_back(nullptr);  // composed below
        continue;
      }
      const PyBlock& pb = block(b.block);
      resolved.columns[i].push_back(&pb.rows.at(b.row));
    }
  }
  for (const rd::GroupInput& g : group_inputs) {
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(g.members.size()));
    if (list == nullptr) throw_foreign();
    for (std::size_t k = 0; k < g.members.size(); ++k) {
      const PyBlock& pb = block(g.members[k].block);
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k),
                      Py_NewRef(pb.rows.at(g.members[k].row).obj));
    }
    auto composed = std::make_shared<PyBlock>();
    composed->rows.push_back(PyValue{false, list, nullptr, 0});
    resolved.columns.at(g.input).at(g.row) = &composed->rows[0];
    resolved.keep_alive.push_back(composed);
  }
  for (auto& [id, b] : in) resolved.keep_alive.push_back(b);

  rd::Attempt a;
  std::string fatal;
  {
    nb::gil_scoped_release release;  // the worker boundary takes the GIL where it needs it
    a = rd::invoke_call(*plan_, inv, *instance_, resolved);
    if (a.kind == rd::Attempt::Kind::lost) {
      // Like a local actor, a Ray actor whose UDF raised ActorLost rebuilds its instance.
      std::string error;
      auto fresh = rd::build_instance(*plan_, pool_, error);
      if (fresh) {
        instance_ = std::move(fresh);
      } else {
        fatal = error;
      }
    }
  }
  auto wall = [](Clock::time_point t) {
    const auto system = std::chrono::system_clock::now() - (Clock::now() - t);
    return std::chrono::duration<double>(system.time_since_epoch()).count();
  };
  std::size_t nblocks = 0;
  for (const rd::OutputSlot& s : inv.outputs) nblocks += s.child_block != 0 ? 2 : 1;
  nb::object status;
  switch (a.kind) {
    case rd::Attempt::Kind::ok: {
      const std::string report = rd::encode(a.report);
      status = nb::make_tuple(0, nb::bytes(report.data(), report.size()), wall(a.start),
                              wall(a.end), "");
      break;
    }
    case rd::Attempt::Kind::failed:
      status = nb::make_tuple(1, a.error, wall(a.start), wall(a.end), "");
      break;
    case rd::Attempt::Kind::lost:
      status = nb::make_tuple(fatal.empty() ? 2 : 3, a.error, wall(a.start), wall(a.end), fatal);
      break;
  }
  nb::object out = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(1 + nblocks)));
  PyTuple_SET_ITEM(out.ptr(), 0, status.release().ptr());
  std::size_t j = 1;
  auto find = [&](rd::BlockId id) -> PyObject* {
    for (const auto& [bid, ref] : a.blocks)
      if (bid == id) return block_to_list(*ref);
    return Py_NewRef(Py_None);
  };
  for (const rd::OutputSlot& s : inv.outputs) {
    const bool ok = a.kind == rd::Attempt::Kind::ok && a.report.contract_error.empty();
    PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(j++),
                     ok ? find(s.block) : Py_NewRef(Py_None));
    if (s.child_block != 0) {
      PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(j++),
                       ok ? find(s.child_block) : Py_NewRef(Py_None));
    }
  }
  {
    // The attempt's blocks hold Python objects: drop them with the GIL held (it is).
    a.blocks.clear();
  }
  return nb::borrow<nb::tuple>(out);
}

}  // namespace rayorch::python
