// The Ray backend's store of one run's blocks, on the driver. See ray_store.h.
#include "ray_store.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ray_blocks.h"
#include <fmt/format.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace rayorch::python {
namespace {

using rd::ActorBlockCache;

class RayStore final : public rd::BlockStore {
 public:
  RayStore(RayBackendClient backend, std::shared_ptr<ActorBlockCache> cache)
      : backend_(std::move(backend)), cache_(std::move(cache)) {}
  RayStore(const RayStore&) = delete;
  RayStore& operator=(const RayStore&) = delete;
  ~RayStore() override {
    cache_->released_all();       // block ids mean nothing once the run's store is gone
    if (!python_alive()) return;  // the entries' ObjectRefs leak with the interpreter
    Gil gil;                      // the entries hold ObjectRefs
    entries_.clear();
  }

  bool put(rd::BlockId id, rd::BlockRef block) override {
    Entry& e = entries_[id];
    if (e.remote || e.group) return false;
    cache_->released(id);  // no actor may hold other contents under this id
    if (const auto* remote = dynamic_cast<const RemoteBlock*>(block.get()); remote != nullptr) {
      // A block its actor kept: that actor holds it (once the id's old contents are gone).
      if (const auto holder = remote->kept_by(); holder.actor >= 0)
        cache_->kept(holder.pool, holder.actor, id);
      e.remote = std::move(block);
      return true;
    }
    // A block the driver made (a source slice): its values go to the object store once, and
    // the driver keeps its own view to materialise outputs that are source values.
    Gil gil;
    nb::object list = nb::steal(block_to_list(*block));
    e.remote = std::make_shared<RemoteBlock>(id, backend_.put(list));
    e.local = std::move(block);
    return true;
  }

  const void* resolve(const rd::Binding& b) override {
    Entry& e = entry(b.block);
    if (e.group) {
      if (!e.fetched) {
        Gil gil;
        std::vector<std::shared_ptr<PyBlock>> fetched(e.member_blocks.size());
        PyObject* list = compose_group(e.members, e.layout, [&](const rd::Binding& m) {
          const std::size_t k = member_index(e, m.block);
          if (!fetched[k]) fetched[k] = fetch(e.member_blocks[k]);
          return fetched[k]->rows.at(m.row).obj;
        });
        auto block = std::make_shared<PyBlock>();
        block->rows.push_back(PyValue{false, list, nullptr, 0});
        e.fetched = std::move(block);
      }
      return e.fetched->at(0);
    }
    if (e.local) return e.local->at(b.row);
    if (!e.fetched) {
      Gil gil;
      e.fetched = fetch(e.remote);
    }
    return e.fetched->at(b.row);
  }

  bool fetches() const override { return true; }
  // Values live in Ray's object store, on nodes that can be lost.
  bool can_lose_values() const override { return true; }

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
    for (const rd::BlockRef* b : blocks) refs.append(nb::handle(readable(*b).ref()));
    nb::list got;
    try {
      got = backend_.get(refs);
    } catch (const nb::python_error& e) {
      if (!is_loss(e)) throw;
      return;  // unreadable() finds which blocks went, one at a time
    }
    for (std::size_t i = 0; i < targets.size(); ++i)
      targets[i]->fetched = list_to_block(got[i].ptr());
  }

  std::vector<rd::BlockId> unreadable(const std::vector<rd::Binding>& values,
                                      std::string& reason) override {
    std::vector<rd::BlockId> lost;
    auto add = [&](rd::BlockId id) {
      if (std::find(lost.begin(), lost.end(), id) == lost.end()) lost.push_back(id);
    };
    Gil gil;
    for (const rd::Binding& v : values) {
      auto it = entries_.find(v.block);
      if (it == entries_.end()) continue;
      Entry& e = it->second;
      if (e.local || e.fetched) continue;
      try {
        if (!e.group) {
          e.fetched = fetch(e.remote);
          continue;
        }
        resolve(v);  // composes the group from its members' blocks
      } catch (const nb::python_error& error) {
        if (!is_loss(error)) throw;
        reason = loss_text(error);
        if (!e.group) {
          add(v.block);
          continue;
        }
        for (const rd::BlockRef& m : e.member_blocks) {
          try {
            fetch(m);
          } catch (const nb::python_error& member) {
            if (!is_loss(member)) throw;
            add(remote(m).id());
          }
        }
      }
    }
    return lost;
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
                                          static_cast<std::uint32_t>(row), e.members, e.layout});
        for (const rd::BlockRef& m : e.member_blocks) {
          const rd::BlockId id = remote(m).id();
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
        spell_out(c.members, e);
        // The group holds its members' blocks: the engine may release them right away.
        for (const rd::BlockRef& b : e.member_blocks) ++groups_holding_[remote(b).id()];
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
  // Invariant: a group's `members` name values in remote blocks only (never another group:
  // a group of groups is spelt out down to its values, nested as `layout` says, so it stays
  // readable after the engine releases the inner groups), and `member_blocks` holds each of
  // their blocks once.
  struct Entry {
    rd::BlockRef remote;  // a RemoteBlock; null for a group
    rd::BlockRef local;   // a source slice: the driver's own view of it
    bool group = false;
    std::vector<rd::Binding> members;         // a group: its values, in order
    std::vector<std::uint32_t> layout;        // a group of groups: rd::GroupInput::layout
    std::vector<rd::BlockRef> member_blocks;  // a group: its members' distinct blocks
    std::shared_ptr<PyBlock> fetched;         // fetched or composed to materialise outputs
  };

  // Sets group `g`'s members, layout and member blocks from the engine's bindings, each a
  // value or a group. An inner group's member blocks come from the group itself: the engine
  // may have released them already.
  void spell_out(const std::vector<rd::Binding>& bindings, Entry& g) const {
    auto hold = [&](const rd::BlockRef& block) {
      const rd::BlockId id = remote(block).id();
      if (std::none_of(g.member_blocks.begin(), g.member_blocks.end(),
                       [&](const rd::BlockRef& b) { return remote(b).id() == id; }))
        g.member_blocks.push_back(block);
    };
    const bool nested = std::any_of(bindings.begin(), bindings.end(),
                                    [&](const rd::Binding& b) { return entry(b.block).group; });
    if (nested) g.layout.push_back(static_cast<std::uint32_t>(bindings.size()));
    for (const rd::Binding& b : bindings) {
      const Entry& m = entry(b.block);
      if (!m.group) {
        if (nested) g.layout.push_back(rd::kGroupLeaf);
        g.members.push_back(b);
        hold(m.remote);
        continue;
      }
      if (m.layout.empty()) {
        g.layout.push_back(static_cast<std::uint32_t>(m.members.size()));
        g.layout.insert(g.layout.end(), m.members.size(), rd::kGroupLeaf);
      } else {
        g.layout.insert(g.layout.end(), m.layout.begin(), m.layout.end());
      }
      g.members.insert(g.members.end(), m.members.begin(), m.members.end());
      for (const rd::BlockRef& block : m.member_blocks) hold(block);
    }
  }

  // Drops block `id` from the store (the caller holds the GIL). The actors may drop their
  // copies only once nothing can read the block again: a block that groups hold as a member
  // is read through them, so its copies go with the last of those groups. With that, a
  // block released to the actor cache is never read again in this run, which its
  // invariants rely on (execution/actor_block_cache.h).
  void release(rd::BlockId id) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    std::vector<rd::BlockId> members;
    if (it->second.group) {
      for (const rd::BlockRef& m : it->second.member_blocks) members.push_back(remote(m).id());
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
      if (remote(e.member_blocks[k]).id() == id) return k;
    throw std::logic_error("internal error: a group member's block is not held by the group");
  }

  // True when `e` is Ray's error for an object lost with its node (ObjectLostError and its
  // family); the caller holds the GIL.
  static bool is_loss(const nb::python_error& e) {
    nb::object exceptions;
    try {
      exceptions = nb::module_::import_("ray.exceptions");
    } catch (const nb::python_error&) {
      return false;  // not Ray's
    }
    return e.matches(exceptions.attr("ObjectLostError"));
  }

  // "Type: the first line of its message" (the caller holds the GIL).
  static std::string loss_text(const nb::python_error& e) {
    std::string text = nb::cast<std::string>(nb::str(e.value()));
    const std::size_t start = text.find_first_not_of(" \n");
    text = start == std::string::npos ? std::string() : text.substr(start);
    text = text.substr(0, text.find('\n'));
    return nb::cast<std::string>(nb::handle(e.type()).attr("__name__")) + ": " + text;
  }

  // A block the driver reads: never one kept in an actor, since only Calls of that actor's
  // pool read those (ray_pools.cc).
  static const RemoteBlock& readable(const rd::BlockRef& block) {
    const RemoteBlock& r = remote(block);
    if (r.kept()) {
      throw std::logic_error(fmt::format(
          "internal error: the driver read block {:#x}, which only its actor holds", r.id()));
    }
    return r;
  }

  // Fetches a block's values from the object store (the caller holds the GIL).
  std::shared_ptr<PyBlock> fetch(const rd::BlockRef& block) {
    nb::list refs;
    refs.append(nb::handle(readable(block).ref()));
    return list_to_block(backend_.get(refs)[0].ptr());
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

  RayBackendClient backend_;
  std::shared_ptr<ActorBlockCache> cache_;
  std::unordered_map<rd::BlockId, Entry> entries_;
  // Per block that groups hold as a member: how many groups; and the members the engine
  // released already, whose actor copies go with their last group.
  std::unordered_map<rd::BlockId, int> groups_holding_;
  std::unordered_set<rd::BlockId> released_members_;
};

}  // namespace

std::unique_ptr<rd::BlockStore> make_ray_store(RayBackendClient backend,
                                               std::shared_ptr<rd::ActorBlockCache> cache) {
  return std::make_unique<RayStore>(std::move(backend), std::move(cache));
}

}  // namespace rayorch::python
