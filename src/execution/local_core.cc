// The embedded local backend: one thread per actor, the driver loop on the calling thread.
#include <sys/ioctl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "rayorch/errors.h"
#include "rayorch/executor.h"

#include "execution/invoke.h"
#include "execution/run_state.h"

namespace rayorch::detail {
namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::uint64_t run = 0;
  Invocation invocation;
  ResolvedInputs inputs;  // holds the input blocks, for attempts that may be abandoned
};

struct Completion {
  std::uint64_t run = 0;  // a report that outlived its run is stale by construction
  int pool = -1;
  int slot = -1;
  std::uint64_t epoch = 0;
  Attempt attempt;
  bool replaced = false;
  std::string fatal;  // the actor could not (re)build its UDF instance
};

struct CompletionQueue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Completion> items;

  void push(Completion c) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      items.push_back(std::move(c));
    }
    cv.notify_one();
  }
};

struct Mailbox {
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<Task> task;
  bool stop = false;
};

struct Startup {
  std::mutex mutex;
  std::condition_variable cv;
  int pending = 0;
  std::string error;
};

void actor_main(std::shared_ptr<const RuntimePlan> plan, int pool, int slot, std::uint64_t epoch,
                std::shared_ptr<Mailbox> box, std::shared_ptr<CompletionQueue> done,
                std::shared_ptr<Startup> startup) {
  std::string error;
  std::unique_ptr<UdfInstance> instance = build_instance(*plan, pool, error);
  if (startup) {
    std::lock_guard<std::mutex> lock(startup->mutex);
    if (!instance && startup->error.empty()) {
      startup->error = fmt::format("{} (actor {} of pool {})", error, slot, plan->pools[pool].name);
    }
    --startup->pending;
    startup->cv.notify_all();
  }
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(box->mutex);
      box->cv.wait(lock, [&] { return box->stop || box->task.has_value(); });
      if (!box->task) return;
      task = std::move(*box->task);
      box->task.reset();
    }
    Completion c;
    c.run = task.run;
    c.pool = pool;
    c.slot = slot;
    c.epoch = epoch;
    if (!instance) {
      c.fatal = error;
    } else {
      c.attempt = invoke_call(*plan, task.invocation, *instance, task.inputs);
      if (c.attempt.kind == Attempt::Kind::lost) {
        // A lost actor is replaced by a fresh UDF instance.
        instance.reset();
        instance = build_instance(*plan, pool, error);
        c.replaced = true;
        if (!instance) c.fatal = "replacing a lost actor failed: " + error;
      }
    }
    task = Task{};
    done->push(std::move(c));
  }
}

// "[rayorch] " + the line, cut to the terminal's width so that it never wraps (a wrapped
// line would not be overwritten by the next update).
std::string fit_to_terminal(const std::string& line) {
  std::string s = "[rayorch] " + line;
  struct winsize ws {};
  const std::size_t width =
      ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  if (s.size() >= width) s = s.substr(0, width > 4 ? width - 4 : 0) + "...";
  return s;
}

struct Actor {
  int pool = -1;
  int slot = -1;
  std::uint64_t epoch = 0;
  std::shared_ptr<Mailbox> box;
  std::thread thread;
  bool busy = false;
  std::optional<Dispatch> current;
  Clock::time_point deadline = Clock::time_point::max();
};

class LocalCore final : public ExecutionCore {
 public:
  explicit LocalCore(std::shared_ptr<const RuntimePlan> plan)
      : plan_(std::move(plan)), done_(std::make_shared<CompletionQueue>()) {
    auto startup = std::make_shared<Startup>();
    for (std::size_t p = 0; p < plan_->pools.size(); ++p) {
      actors_.emplace_back();
      for (int r = 0; r < plan_->pools[p].options.replicas; ++r) {
        {
          std::lock_guard<std::mutex> lock(startup->mutex);
          ++startup->pending;
        }
        actors_[p].push_back(start_actor(static_cast<int>(p), r, startup));
      }
    }
    std::unique_lock<std::mutex> lock(startup->mutex);
    startup->cv.wait(lock, [&] { return startup->pending == 0; });
    if (!startup->error.empty()) {
      const std::string error = startup->error;
      lock.unlock();
      close();
      throw ExecutionError(error);
    }
  }

  ~LocalCore() override { close(); }

  RunMetrics run(SourceData sources, const RunOptions& options, const RootSink& sink) override {
    if (closed_) {
      throw ExecutionError(
          "this executor is closed (after close() or an aborted run); create a "
          "new executor to run again");
    }
    return run_impl(std::move(sources), options, sink);
  }

  void close() override {
    if (closed_) return;
    closed_ = true;
    for (auto& pool : actors_) {
      for (Actor& a : pool) {
        {
          std::lock_guard<std::mutex> lock(a.box->mutex);
          a.box->stop = true;
        }
        a.box->cv.notify_all();
      }
    }
    for (auto& pool : actors_) {
      for (Actor& a : pool) {
        if (!a.thread.joinable()) continue;
        // An attempt that can time out may hang: do not wait for it.
        if (a.busy && plan_->pools[a.pool].options.timeout.count() > 0)
          a.thread.detach();
        else
          a.thread.join();
      }
    }
    actors_.clear();
  }

  bool closed() const override { return closed_; }
  const std::vector<RpcRecord>& rpc_log() const override { return no_log_; }

 private:
  Actor start_actor(int pool, int slot, std::shared_ptr<Startup> startup) {
    Actor a;
    a.pool = pool;
    a.slot = slot;
    a.epoch = ++epochs_;
    a.box = std::make_shared<Mailbox>();
    a.thread =
        std::thread(actor_main, plan_, pool, slot, a.epoch, a.box, done_, std::move(startup));
    return a;
  }

  // Hands READY work to every idle actor. Returns the number of RPCs sent.
  std::size_t dispatch(RunState& state) {
    std::size_t sent = 0;
    for (std::size_t p = 0; p < actors_.size(); ++p) {
      for (Actor& a : actors_[p]) {
        if (a.busy) continue;
        // Holding a small batch back is safe only while another RPC runs: its completion
        // wakes the loop, so nothing can stall.
        auto d = state.pick(static_cast<int>(p), in_flight_ > 0);
        if (!d) break;
        const PlanCall& call = plan_->calls[d->batch.call];
        Task t;
        t.run = run_;
        t.inputs = state.store().resolve_inputs(d->batch);
        t.invocation = d->batch;
        const auto timeout = plan_->pools[call.pool].options.timeout;
        a.deadline = timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max();
        a.busy = true;
        a.current = std::move(*d);
        {
          std::lock_guard<std::mutex> lock(a.box->mutex);
          a.box->task = std::move(t);
        }
        a.box->cv.notify_one();
        ++in_flight_;
        ++sent;
      }
    }
    return sent;
  }

  void handle(RunState& state, Completion& c) {
    if (c.run != run_) {
      // An attempt abandoned in an earlier run: its engine is gone, nothing can accept it.
      state.count_stale_report();
      return;
    }
    Actor* owner = nullptr;
    if (c.pool >= 0 && c.pool < static_cast<int>(actors_.size())) {
      for (Actor& a : actors_[c.pool]) {
        if (a.slot == c.slot && a.epoch == c.epoch) owner = &a;
      }
    }
    if (owner == nullptr) {
      // The late report of an abandoned attempt: the generation fence rejects it.
      state.reject_late(c.attempt.report);
      return;
    }
    Dispatch d = std::move(*owner->current);
    owner->current.reset();
    owner->busy = false;
    owner->deadline = Clock::time_point::max();
    --in_flight_;
    if (!c.fatal.empty()) throw ExecutionError(c.fatal);
    switch (c.attempt.kind) {
      case Attempt::Kind::ok:
        state.record_rpc(d, c.slot, c.attempt.start, c.attempt.end, "ok");
        state.apply_result(d, c.attempt);
        break;
      case Attempt::Kind::failed:
        state.record_rpc(d, c.slot, c.attempt.start, c.attempt.end, "failed");
        state.apply_failure(d, c.attempt.error);
        break;
      case Attempt::Kind::lost:
        state.record_rpc(d, c.slot, c.attempt.start, c.attempt.end, "lost");
        ++state.actors_replaced();
        state.apply_lost(d, c.attempt.error);
        break;
    }
  }

  // Abandons actors whose RPC ran past the Module's timeout and replaces them.
  void expire(RunState& state) {
    const auto now = Clock::now();
    for (auto& pool : actors_) {
      for (Actor& a : pool) {
        if (!a.busy || a.deadline > now) continue;
        Dispatch d = std::move(*a.current);
        const auto timeout = plan_->pools[a.pool].options.timeout;
        {
          std::lock_guard<std::mutex> lock(a.box->mutex);
          a.box->stop = true;
        }
        a.box->cv.notify_all();
        a.thread.detach();  // the hung thread is not killed; it exits after its attempt
        Actor fresh = start_actor(a.pool, a.slot, nullptr);
        a = std::move(fresh);
        --in_flight_;
        ++state.actors_replaced();
        state.record_rpc(d, a.slot, now - timeout, now, "timeout");
        state.apply_lost(d, fmt::format("rayorch::Timeout: the RPC ran past the {} ms timeout",
                                        timeout.count()));
      }
    }
  }

  Clock::time_point next_deadline() const {
    auto t = Clock::time_point::max();
    for (const auto& pool : actors_) {
      for (const Actor& a : pool) {
        if (a.busy) t = std::min(t, a.deadline);
      }
    }
    return t;
  }

  RunMetrics run_impl(SourceData sources, const RunOptions& options, const RootSink& sink) {
    std::vector<int> sizes;
    for (const auto& pool : actors_) sizes.push_back(static_cast<int>(pool.size()));
    RunState state(plan_, std::move(sources), options, sink, sizes);
    ++run_;
    try {
      return drive(state, options);
    } catch (const std::exception& e) {
      state.write_aborted(e.what());
      // Busy actors still read input values owned by `state`: stop and join them before
      // it is destroyed. Attempts that can time out hold their inputs and are detached.
      close();
      throw;
    } catch (...) {
      // Busy actors still read input values owned by `state`: stop and join them before
      // it is destroyed. Attempts that can time out hold their inputs and are detached.
      close();
      throw;
    }
  }

  RunMetrics drive(RunState& state, const RunOptions& options) {
    {
      // Late reports of attempts abandoned in earlier runs are rejected here, so each one
      // is counted even when this run never waits for a completion.
      std::deque<Completion> leftovers;
      {
        std::lock_guard<std::mutex> lock(done_->mutex);
        leftovers.swap(done_->items);
      }
      for (Completion& c : leftovers) handle(state, c);
    }
    const bool show_progress = options.progress && ::isatty(STDERR_FILENO) == 1;
    auto last_progress = Clock::now();
    state.admit();
    state.settle();
    int idle_rounds = 0;
    while (!state.done()) {
      dispatch(state);
      if (in_flight_ == 0) {
        // Nothing was sent, but a pick may have sealed barriered Grains: settling publishes
        // their facts (and may retire and admit input batches). A stuck engine throws there
        // with its progress counters; this is the backstop.
        state.settle();
        if (++idle_rounds > 2 && !state.done()) {
          throw ExecutionError(
              "deadlock: input batches are incomplete but no Grain is "
              "dispatchable and nothing is in flight");
        }
        continue;
      }
      idle_rounds = 0;
      std::deque<Completion> batch;
      {
        std::unique_lock<std::mutex> lock(done_->mutex);
        const auto wake = std::min({next_deadline(), state.next_hold_deadline(),
                                    Clock::now() + std::chrono::milliseconds(200)});
        done_->cv.wait_until(lock, wake, [&] { return !done_->items.empty(); });
        batch.swap(done_->items);
      }
      for (Completion& c : batch) handle(state, c);
      expire(state);
      state.settle();
      if (show_progress && Clock::now() - last_progress > std::chrono::milliseconds(250)) {
        last_progress = Clock::now();
        std::fprintf(stderr, "\r\033[K%s", fit_to_terminal(state.progress_line()).c_str());
        std::fflush(stderr);
      }
    }
    if (show_progress)
      std::fprintf(stderr, "\r\033[K%s\n", fit_to_terminal(state.progress_line()).c_str());
    return state.finish();
  }

  std::shared_ptr<const RuntimePlan> plan_;
  std::shared_ptr<CompletionQueue> done_;
  std::vector<std::vector<Actor>> actors_;
  std::uint64_t epochs_ = 0;
  std::uint64_t run_ = 0;
  std::size_t in_flight_ = 0;
  bool closed_ = false;
  std::vector<RpcRecord> no_log_;
};

}  // namespace

std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const LocalBackend&) {
  return std::make_unique<LocalCore>(std::move(plan));
}

}  // namespace rayorch::detail
