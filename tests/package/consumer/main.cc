// Minimal program built against the *installed* rayorch package.
#include <rayorch/rayorch.h>

int main() {
  return 0;
}
