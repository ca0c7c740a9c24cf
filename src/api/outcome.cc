// Definitions of include/rayorch/outcome.h.
#include "rayorch/outcome.h"

namespace rayorch {

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::present:
      return "present";
    case Outcome::dropped:
      return "dropped";
    case Outcome::failed:
      return "failed";
    case Outcome::suppressed:
      return "suppressed";
  }
  return "unknown";
}

}  // namespace rayorch
