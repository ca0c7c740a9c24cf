// `rayorch explain`: placeholder until the example pipelines land.
#include "commands.h"

namespace rayorch::cli {
void add_explain_command(CLI::App&) {}
}  // namespace rayorch::cli
