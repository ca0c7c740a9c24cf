// Local threads: each worker is a thread owning one UDF instance, fed through a one-slot
// mailbox; results come back through one completion queue. A worker of a process-isolated
// pool is a proxy thread instead: it owns a worker process (process_worker.h) and runs each
// task there, so both kinds share the mailboxes, the queue and the one driver loop.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "execution/backends/backends.h"
#include "execution/backends/fork_server.h"
#include "execution/backends/process_worker.h"
#include "execution/backends/spin_then_sleep.h"
#include "execution/crash_record.h"

namespace rayorch::detail {
namespace {

// Shared between the driver and every worker thread (each member under `mutex`).
struct CompletionQueue {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::pair<std::uint64_t, WorkerResult>> items;  // (worker epoch, result)
  std::vector<ActorEvent> started;  // first constructors finished, not yet taken
  // Written under `mutex`, read without it by the driver's polling (spin_then_sleep.h): how
  // many results were ever pushed, and whether `started` holds any event.
  std::atomic<std::size_t> pushed{0};
  std::atomic<bool> has_started{false};
  // When the oldest of `items` was pushed (meaningful while `items` is not empty): when the
  // driver's wait had its answer (SpinThenSleep::answered).
  SpinThenSleep::Clock::time_point first_pushed_at{};

  void push(std::uint64_t epoch, WorkerResult r) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (items.empty()) first_pushed_at = SpinThenSleep::Clock::now();
      items.emplace_back(epoch, std::move(r));
      pushed.fetch_add(1, std::memory_order_release);
    }
    cv.notify_one();
  }
};

// One worker's inbox: at most one task, or the order to stop.
struct Mailbox {
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<WorkerTask> task;
  SpinThenSleep::Clock::time_point posted_at{};  // when `task` was posted
  bool stop = false;
  // Written under `mutex`, read without it by the worker's polling (spin_then_sleep.h): a task
  // or the order to stop waits.
  std::atomic<bool> has_work{false};
};

// Tells the driver that a worker's first constructor finished (eager start, DESIGN 6.1.4). A
// replacement (`announce` false) is not announced: the driver counts it ready at once.
void report_startup(bool announce, CompletionQueue& done, const RuntimePlan& plan, int pool,
                    int slot, const std::string& error) {
  if (!announce) return;
  ActorEvent s{.kind = error.empty() ? ActorEvent::Kind::ready : ActorEvent::Kind::failed,
               .pool = pool,
               .actor = slot,
               .at = std::chrono::steady_clock::now(),
               .error = {}};
  if (!error.empty())
    s.error = fmt::format("{} (actor {} of pool {})", error, slot, plan.pools[pool].name);
  {
    std::lock_guard<std::mutex> lock(done.mutex);
    done.started.push_back(std::move(s));
    done.has_started.store(true, std::memory_order_release);
  }
  done.cv.notify_one();
}

// Waits for the next task; false when the worker is told to stop.
bool next_task(Mailbox& box, WorkerTask& task, SpinThenSleep& poller) {
  poller.poll(SpinThenSleep::Clock::time_point::max(),
              [&] { return box.has_work.load(std::memory_order_acquire); });
  std::unique_lock<std::mutex> lock(box.mutex);
  box.cv.wait(lock, [&] { return box.stop || box.task.has_value(); });
  if (!box.task) return false;
  task = std::move(*box.task);
  box.task.reset();
  box.has_work.store(false, std::memory_order_relaxed);
  poller.answered(box.posted_at);
  return true;
}

// The loop of one worker thread: takes the tasks of its mailbox in order, lets `attempt` fill
// each result, drops the task's inputs and reports. `attempt` returns false when nobody waits
// for the result any more (the worker was abandoned), which ends the loop unreported.
template <class AttemptFn>
void serve_tasks(Mailbox& box, CompletionQueue& done, std::uint64_t epoch, int pool, int slot,
                 AttemptFn attempt) {
  SpinThenSleep poller;
  for (;;) {
    WorkerTask task;
    if (!next_task(box, task, poller)) return;
    WorkerResult r;
    r.run = task.run;
    r.pool = pool;
    r.slot = slot;
    if (!attempt(task, r)) return;
    task = WorkerTask{};  // drop the inputs before reporting
    done.push(epoch, std::move(r));
  }
}

void worker_main(std::shared_ptr<const RuntimePlan> plan, int pool, int slot, std::uint64_t epoch,
                 std::shared_ptr<Mailbox> box, std::shared_ptr<CompletionQueue> done,
                 bool announce) {
  std::string error;
  std::unique_ptr<UdfInstance> instance = build_instance(*plan, pool, error);
  report_startup(announce, *done, *plan, pool, slot, instance ? "" : error);
  serve_tasks(*box, *done, epoch, pool, slot, [&](WorkerTask& task, WorkerResult& r) {
    if (!instance) {
      r.fatal = error;
      return true;
    }
    {
      const CrashScope scope(task.crash_label);
      r.attempt = invoke_call(*plan, task.invocation, *instance, task.inputs);
    }
    if (r.attempt.kind == Attempt::Kind::lost) {
      // A lost actor is replaced by a fresh UDF instance.
      instance.reset();
      instance = build_instance(*plan, pool, error);
      r.rebuilt = true;
      if (!instance) r.fatal = "replacing a lost actor failed: " + error;
    }
    return true;
  });
}

// The proxy of one worker process: the same loop as worker_main, with the process in the
// place of the UDF instance. A lost process is replaced before the result is reported.
void proxy_main(std::shared_ptr<const RuntimePlan> plan, int pool, int slot, std::uint64_t epoch,
                std::shared_ptr<Mailbox> box, std::shared_ptr<CompletionQueue> done, bool announce,
                std::shared_ptr<ProcessWorker> process) {
  std::string error = process->start();
  report_startup(announce, *done, *plan, pool, slot, error);
  serve_tasks(*box, *done, epoch, pool, slot, [&](WorkerTask& task, WorkerResult& r) {
    if (!error.empty()) {
      r.fatal = error;
      return true;
    }
    r.attempt = process->call(task);
    // The driver replaced this worker (a timeout) and killed its process: nobody waits for
    // this result.
    if (process->abandoned()) return false;
    if (r.attempt.kind == Attempt::Kind::lost) {
      r.rebuilt = true;
      error = process->start();
      if (!error.empty()) r.fatal = "replacing a lost worker process failed: " + error;
    }
    return true;
  });
}

struct Worker {
  std::uint64_t epoch = 0;
  std::shared_ptr<Mailbox> box;
  std::shared_ptr<ProcessWorker> process;  // isolated pools only
  std::thread thread;
  bool busy = false;  // a task was submitted and its result not yet returned by wait()
};

class ThreadPools final : public WorkerPools {
 public:
  ThreadPools(std::shared_ptr<const RuntimePlan> plan, const WorkerServerLaunch& launch)
      : plan_(std::move(plan)), done_(std::make_shared<CompletionQueue>()) {
    // The fork server is started before this object starts any thread (fork_server.h).
    for (const PlanPool& pool : plan_->pools) {
      if (pool.options.isolation == Isolation::process && !forks_) {
        forks_ = std::make_shared<ForkServer>(plan_, launch);
      }
    }
    // Eager start: the constructors run on their threads while the driver starts; each
    // actor's start reaches it through take_actor_events().
    // A self-sizing pool's slots stay stopped until the driver starts them (start_actor).
    for (std::size_t p = 0; p < plan_->pools.size(); ++p) {
      const ModuleOptions& o = plan_->pools[p].options;
      workers_.emplace_back();
      for (int r = 0; r < pool_slots(o); ++r)
        workers_[p].push_back(sizes_itself(o) ? Worker{} : start(static_cast<int>(p), r, true));
    }
  }

  ~ThreadPools() override { stop(); }

  std::vector<int> sizes() const override {
    std::vector<int> s;
    for (const auto& pool : workers_) s.push_back(static_cast<int>(pool.size()));
    return s;
  }

  bool starts_in_background() const override { return true; }

  void take_actor_events(std::vector<ActorEvent>& out) override {
    std::lock_guard<std::mutex> lock(done_->mutex);
    for (ActorEvent& s : done_->started) out.push_back(std::move(s));
    done_->started.clear();
    done_->has_started.store(false, std::memory_order_release);
  }

  std::size_t max_outstanding() const override {
    std::size_t n = 0;
    for (const auto& pool : workers_) n += pool.size();
    return n;
  }

  void submit(WorkerTask task) override {
    Worker& w = workers_[task.pool][task.slot];
    w.busy = true;
    {
      std::lock_guard<std::mutex> lock(w.box->mutex);
      w.box->task = std::move(task);
      w.box->posted_at = SpinThenSleep::Clock::now();
      w.box->has_work.store(true, std::memory_order_release);
    }
    w.box->cv.notify_one();
  }

  void wait(Clock::time_point deadline, std::vector<WorkerResult>& out) override {
    std::deque<std::pair<std::uint64_t, WorkerResult>> ready;
    // When the answer came: the first result's push, else now (a start, or the deadline).
    SpinThenSleep::Clock::time_point arrived{};
    {
      // Results pushed but not yet taken, or a start not yet taken.
      poller_.poll(deadline, [&] {
        return done_->pushed.load(std::memory_order_acquire) != taken_ ||
               done_->has_started.load(std::memory_order_acquire);
      });
      std::unique_lock<std::mutex> lock(done_->mutex);
      done_->cv.wait_until(lock, deadline,
                           [&] { return !done_->items.empty() || !done_->started.empty(); });
      arrived = done_->items.empty() ? SpinThenSleep::Clock::now() : done_->first_pushed_at;
      ready.swap(done_->items);
    }
    poller_.answered(arrived);
    taken_ += ready.size();
    for (auto& [epoch, r] : ready) {
      if (static_cast<std::size_t>(r.pool) >= workers_.size()) continue;  // stopped
      Worker& w = workers_[r.pool][r.slot];
      r.current = w.epoch == epoch;
      if (r.current) w.busy = false;
      out.push_back(std::move(r));
    }
  }

  bool resizable() const override { return true; }
  bool in_driver_process(int pool) const override {
    return plan_->pools[static_cast<std::size_t>(pool)].options.isolation != Isolation::process;
  }

  void start_actor(int pool, int actor) override {
    Worker& w = workers_[pool][actor];
    if (w.box) return;  // started already
    w = start(pool, actor, true);
  }

  void retire_actor(int pool, int actor) override {
    Worker& w = workers_[pool][actor];
    if (!w.box) return;
    halt(w);
    // The actor is idle (the driver's rule): its thread leaves its mailbox loop at once.
    if (w.thread.joinable()) w.thread.join();
    w = Worker{};
  }

  void replace(int pool, int slot) override {
    Worker& w = workers_[pool][slot];
    halt(w);
    // A hung thread cannot be killed; it exits after its attempt, whose result is then
    // marked not current. The task it holds keeps its inputs alive until then.
    w.thread.detach();
    w = start(pool, slot, false);
  }

  void stop() noexcept override {
    for (auto& pool : workers_) {
      for (Worker& w : pool) {
        if (w.box) halt(w);
      }
    }
    for (std::size_t p = 0; p < workers_.size(); ++p) {
      for (Worker& w : workers_[p]) {
        if (!w.thread.joinable()) continue;
        // An attempt that can time out may hang: do not wait for it. A proxy thread never
        // hangs: its process was killed.
        if (!w.process && w.busy && plan_->pools[p].options.timeout.count() > 0)
          w.thread.detach();
        else
          w.thread.join();
      }
    }
    workers_.clear();
    // Kills and reaps every worker process left (those of replaced workers included).
    if (forks_) forks_->shutdown();
  }

 private:
  // Tells the worker to stop; a worker process is killed (its proxy thread then ends
  // without reporting).
  static void halt(Worker& w) {
    {
      std::lock_guard<std::mutex> lock(w.box->mutex);
      w.box->stop = true;
      w.box->has_work.store(true, std::memory_order_release);
    }
    w.box->cv.notify_all();
    if (w.process) w.process->abandon();
  }

  Worker start(int pool, int slot, bool announce) {
    Worker w;
    w.epoch = ++epochs_;
    w.box = std::make_shared<Mailbox>();
    if (plan_->pools[pool].options.isolation == Isolation::process) {
      w.process = std::make_shared<ProcessWorker>(forks_, plan_, pool, slot);
      w.thread =
          std::thread(proxy_main, plan_, pool, slot, w.epoch, w.box, done_, announce, w.process);
    } else {
      w.thread = std::thread(worker_main, plan_, pool, slot, w.epoch, w.box, done_, announce);
    }
    return w;
  }

  std::shared_ptr<const RuntimePlan> plan_;
  std::shared_ptr<CompletionQueue> done_;
  std::shared_ptr<ForkServer> forks_;  // set when some pool is process-isolated
  std::vector<std::vector<Worker>> workers_;
  std::uint64_t epochs_ = 0;
  // The driver's side of the completion queue: results taken so far (against `pushed`) and
  // its polling before it sleeps.
  std::size_t taken_ = 0;
  SpinThenSleep poller_;
};

}  // namespace

std::unique_ptr<WorkerPools> make_thread_pools(std::shared_ptr<const RuntimePlan> plan,
                                               const WorkerServerLaunch& launch) {
  return std::make_unique<ThreadPools>(std::move(plan), launch);
}

}  // namespace rayorch::detail
