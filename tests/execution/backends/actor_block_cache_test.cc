// The Ray backend's record of which blocks each actor holds (execution/actor_block_cache.h),
// against a model of the actors: each runs its RPCs in the order sent, drops an RPC's
// evictions, then stores the blocks it carries. Sends, runs, returns (in any order) and
// releases interleave at random, with several calls outstanding per actor, under what the
// store guarantees: a released block is not read again in its run, and the next run reuses
// the ids with other contents.
#include "execution/actor_block_cache.h"

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace {

using rayorch::detail::ActorBlockCache;
using BlockId = ActorBlockCache::BlockId;

struct Rpc {
  int actor = 0;
  std::vector<BlockId> evicted;
  std::vector<std::pair<BlockId, int>> held;   // block, contents version expected
  std::vector<std::pair<BlockId, int>> fresh;  // block, contents version carried
  std::vector<ActorBlockCache::Send> sends;
  bool ran = false;
};

class Model {
 public:
  explicit Model(int actors) : cache_({actors}), stores_(static_cast<std::size_t>(actors)) {}

  void send(int actor, const std::vector<BlockId>& reads) {
    for (BlockId b : reads) version_.emplace(b, 0);
    Rpc rpc;
    rpc.actor = actor;
    rpc.evicted = cache_.take_evictions(0, actor);
    std::vector<BlockId> fresh;
    for (BlockId b : reads) {
      if (cache_.holds(0, actor, b)) {
        rpc.held.emplace_back(b, version_[b]);
      } else {
        rpc.fresh.emplace_back(b, version_[b]);
        fresh.push_back(b);
      }
    }
    for (const auto& [b, v] : rpc.held) {
      for (BlockId e : rpc.evicted) ASSERT_NE(e, b) << "an RPC drops a block it reads as held";
    }
    rpc.sends = cache_.sending(fresh);
    rpcs_.push_back(rpc);
    queues_[actor].push_back(rpcs_.size() - 1);
  }

  // The actor runs its oldest queued RPC.
  void run(int actor) {
    auto& queue = queues_[actor];
    if (queue.empty()) return;
    Rpc& rpc = rpcs_[queue.front()];
    queue.pop_front();
    auto& store = stores_[static_cast<std::size_t>(actor)];
    for (BlockId e : rpc.evicted) store.erase(e);
    for (const auto& [b, v] : rpc.held) {
      auto it = store.find(b);
      ASSERT_NE(it, store.end()) << "block " << b << " is not held by actor " << actor;
      ASSERT_EQ(it->second, v) << "block " << b << " resolves to other contents";
    }
    for (const auto& [b, v] : rpc.fresh) store[b] = v;
    rpc.ran = true;
    done_.push_back(static_cast<std::size_t>(&rpc - rpcs_.data()));
  }

  // One RPC that ran comes back (any of them: Ray returns them in any order).
  void arrive(std::mt19937& rng) {
    if (done_.empty()) return;
    std::uniform_int_distribution<std::size_t> pick(0, done_.size() - 1);
    const std::size_t k = pick(rng);
    const Rpc& rpc = rpcs_[done_[k]];
    done_.erase(done_.begin() + static_cast<std::ptrdiff_t>(k));
    cache_.arrived(0, rpc.actor, rpc.sends, true);
  }

  // Nothing reads `b` again in this run.
  void release(BlockId b) { cache_.released(b); }

  // The run ends (nothing outstanding): the next run names other contents with the same ids.
  void end_run() {
    cache_.released_all();
    for (auto& [b, v] : version_) ++v;
  }

  bool quiet() const {
    if (!done_.empty()) return false;
    for (const auto& [actor, q] : queues_)
      if (!q.empty()) return false;
    return true;
  }

  // Every actor holds exactly what the record says once a last RPC took its evictions.
  void expect_no_leak(int actors, const std::vector<BlockId>& ids) {
    for (int a = 0; a < actors; ++a) {
      send(a, {});
      run(a);
      while (!done_.empty()) {
        cache_.arrived(0, rpcs_[done_.back()].actor, rpcs_[done_.back()].sends, true);
        done_.pop_back();
      }
      std::set<BlockId> recorded;
      for (BlockId b : ids)
        if (cache_.holds(0, a, b)) recorded.insert(b);
      std::set<BlockId> actual;
      for (const auto& [b, v] : stores_[static_cast<std::size_t>(a)]) actual.insert(b);
      EXPECT_EQ(recorded, actual) << "actor " << a;
    }
  }

 private:
  ActorBlockCache cache_;
  std::vector<std::map<BlockId, int>> stores_;
  std::map<int, std::deque<std::size_t>> queues_;
  std::vector<Rpc> rpcs_;
  std::vector<std::size_t> done_;
  std::map<BlockId, int> version_;
};

TEST(ActorBlockCache, QueuedCallsReleasesAndReturnsInAnyOrderNeverMislead) {
  const std::vector<BlockId> ids = {1, 2, 3, 4, 5, 6};
  for (unsigned seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    const int actors = 2;
    Model m(actors);
    std::uniform_int_distribution<int> step(0, 9), actor(0, actors - 1), coin(0, 2);
    for (int run = 0; run < 3; ++run) {
      std::vector<BlockId> live = ids;
      for (int i = 0; i < 200; ++i) {
        const int s = step(rng);
        if (s < 4) {
          std::vector<BlockId> reads;
          for (BlockId b : live)
            if (coin(rng) == 0) reads.push_back(b);
          m.send(actor(rng), reads);
        } else if (s < 7) {
          m.run(actor(rng));
        } else if (s < 9 || live.empty()) {
          m.arrive(rng);
        } else {
          std::uniform_int_distribution<std::size_t> pick(0, live.size() - 1);
          const std::size_t k = pick(rng);
          m.release(live[k]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
        if (testing::Test::HasFatalFailure()) return;
      }
      for (int a = 0; a < actors; ++a)
        for (int k = 0; k < 400; ++k) m.run(a);
      while (!m.quiet()) m.arrive(rng);
      if (run < 2) m.end_run();
    }
    m.end_run();
    m.expect_no_leak(actors, ids);
  }
}

// The sequence that broke before sends were tracked: two calls carry a block to one actor,
// the first comes back, the block is released, then the second (queued) comes back.
TEST(ActorBlockCache, AReleaseBetweenASendAndItsReturnIsNotRecordedAsHeld) {
  ActorBlockCache cache({1});
  const auto first = cache.sending({7});
  const auto second = cache.sending({7});
  cache.arrived(0, 0, first, true);
  EXPECT_TRUE(cache.holds(0, 0, 7));
  cache.released(7);
  EXPECT_FALSE(cache.holds(0, 0, 7));
  cache.arrived(0, 0, second, true);
  EXPECT_FALSE(cache.holds(0, 0, 7));  // the copy it brought was released meanwhile
  EXPECT_EQ(cache.take_evictions(0, 0), std::vector<BlockId>{7});
}

TEST(ActorBlockCache, AnRpcThatDidNotRunRecordsNothing) {
  ActorBlockCache cache({2});
  cache.arrived(0, 1, cache.sending({3, 4}), false);
  EXPECT_FALSE(cache.holds(0, 1, 3));
  EXPECT_FALSE(cache.holds(0, 1, 4));
  cache.requeue_evictions(0, 1, {5});
  EXPECT_EQ(cache.take_evictions(0, 1), std::vector<BlockId>{5});
}

}  // namespace
