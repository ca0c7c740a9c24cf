// `rayorch bench ...` (placeholder until the benchmarks land).
#include "commands.h"

namespace rayorch::cli {
void add_bench_commands(CLI::App&) {}
}  // namespace rayorch::cli
