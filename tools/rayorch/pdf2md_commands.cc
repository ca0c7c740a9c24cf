// `rayorch pdf2md` and `rayorch make-samples` (placeholder until the workload lands).
#include "commands.h"

namespace rayorch::cli {
void add_pdf2md_commands(CLI::App&) {}
}  // namespace rayorch::cli
