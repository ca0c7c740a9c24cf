// UDFs shared by the misuse snippets; each snippet makes exactly one mistake with them.
#pragma once

#include <string>
#include <vector>

#include <rayorch/rayorch.h>

namespace ro = rayorch;

struct Inc {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
};

struct AddConst {  // x, static k -> x + k
  std::vector<int> run(ro::Column<int> x, int k) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + k);
    return out;
  }
};

struct Text {
  std::vector<std::string> run(ro::Column<int> x) {
    std::vector<std::string> out;
    for (int v : x) out.push_back(std::to_string(v));
    return out;
  }
};
