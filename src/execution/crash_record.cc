// The crash record. See crash_record.h.
#include "execution/crash_record.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace rayorch::detail {
namespace {

// What this thread runs now (null: nothing the record can name). Set and read only by this
// thread: the handler runs on the thread the signal was raised on (a fault, abort()).
thread_local const CrashLabel* current_label = nullptr;

constexpr std::array<int, 5> fatal_signals{SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// The dispositions install_crash_record() replaced, by signal number. Written once, before
// the handler is installed, and only read afterwards.
struct Chained {
  std::array<struct sigaction, NSIG> previous{};
};

Chained& chained() {
  static Chained c;
  return c;
}

std::string_view signal_words(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV (invalid memory access)";
    case SIGBUS:
      return "SIGBUS (bad memory access)";
    case SIGFPE:
      return "SIGFPE (arithmetic error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGABRT:
      return "SIGABRT (abort)";
    default:
      return "a fatal signal";
  }
}

// The decimal digits of `n` in `buffer`, without allocating.
std::string_view decimal(std::uint64_t n, std::array<char, 20>& buffer) {
  std::size_t at = buffer.size();
  do {
    buffer[--at] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  return {buffer.data() + at, buffer.size() - at};
}

std::string_view text_of(const char* s) {
  return s == nullptr ? std::string_view() : std::string_view(s, std::strlen(s));
}

// Emits the record piece by piece, so that the handler can write it without allocating.
template <class Emit>
void compose(int signal, const CrashLabel& label, Emit emit) {
  std::array<char, 20> digits{};
  emit("rayorch: ");
  emit(signal_words(signal));
  emit(" on an actor thread running Call '");
  emit(text_of(label.call));
  emit("' (Module<");
  emit(text_of(label.module));
  emit(label.grains == 1 ? ">) on Grain " : ">) on Grains ");
  const std::size_t named = std::min<std::size_t>(label.grains, CrashLabel::kKeys);
  for (std::size_t i = 0; i < named; ++i) {
    const CrashLabel::Key& key = label.keys[i];
    if (i > 0) emit(", ");
    emit(decimal(key.root, digits));
    const std::size_t kept = std::min<std::size_t>(key.depth, CrashLabel::kDepth);
    if (key.depth > kept) emit("/...");
    for (std::size_t d = kept; d > 0; --d) {
      emit("/");
      emit(decimal(key.ordinals[d - 1], digits));
    }
  }
  if (label.grains > named) {
    emit(" and ");
    emit(decimal(label.grains - named, digits));
    emit(" more");
  }
  emit(" of input batch ");
  emit(decimal(label.input_batch, digits));
  emit(
      ".\nrayorch: Modules on threads (the default isolation) run in this process, so the "
      "crash ends the run. isolation=\"process\" (Python; Isolation::process in C++) runs a "
      "Module's actors in worker processes, where a crash fails only the rows of that call "
      "and the run goes on.\n");
}

void write_all(std::string_view text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void on_fatal_signal(int signal, siginfo_t*, void*) {
  const int saved_errno = errno;
  if (const CrashLabel* label = current_label; label != nullptr) {
    write_all("\n");
    compose(signal, *label, write_all);
  }
  // Hand on: the handler before this one (faulthandler's Python stacks) or the default
  // action. SA_NODEFER lets the raised signal arrive now; a fault that the chained handler
  // returns from happens again when this handler returns, under that handler.
  ::sigaction(signal, &chained().previous[static_cast<std::size_t>(signal)], nullptr);
  errno = saved_errno;
  ::raise(signal);
}

}  // namespace

CrashScope::CrashScope(const CrashLabel& label) noexcept : outer_(current_label) {
  if (label.call != nullptr) current_label = &label;
}

CrashScope::~CrashScope() {
  current_label = outer_;
}

void install_crash_record() {
  // Once per process: a function-local static is initialised once, also by concurrent callers.
  static const bool installed = [] {
    Chained& c = chained();
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (int signal : fatal_signals) {
      ::sigaction(signal, &action, &c.previous[static_cast<std::size_t>(signal)]);
    }
    return true;
  }();
  (void)installed;
}

std::string crash_record_text(int signal, const CrashLabel& label) {
  std::string text;
  compose(signal, label, [&](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace rayorch::detail
