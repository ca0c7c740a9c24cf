// The logical program recorded by tracing (the contents of detail::Graph).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rayorch/detail/graph.h"

#include "program/port_kind.h"

namespace rayorch::detail {

struct LogicalPort {
  PortKind kind = PortKind::source;
  std::string type;
  int op = -1;   ///< index of the producing Call/expand/reduce/filter/broadcast
  int slot = 0;  ///< which output of that operation
};

struct LogicalModule {
  ModuleRecord record;
};

struct LogicalCall {
  int module = -1;
  CallRecord record;
  std::vector<int> outputs;
};

struct LogicalExpand {
  std::vector<int> lists;
  std::vector<int> children;
  std::vector<ListOps> ops;
};

struct LogicalReduce {
  std::vector<int> values;
  int members = -1;  ///< -1: the first value Port decides membership
  std::vector<int> outputs;
  std::vector<GroupMaker> makers;
};

struct LogicalFilter {
  int source = -1;
  int mask = -1;
  int output = -1;
};

struct LogicalBroadcast {
  int source = -1;
  int like = -1;
  int output = -1;
};

struct Graph::Impl {
  std::vector<LogicalPort> ports;
  std::vector<LogicalModule> modules;
  std::vector<LogicalCall> calls;
  std::vector<LogicalExpand> expands;
  std::vector<LogicalReduce> reduces;
  std::vector<LogicalFilter> filters;
  std::vector<LogicalBroadcast> broadcasts;
  std::vector<int> sources;
  std::vector<int> outputs;
  bool outputs_below_root = false;  ///< an output may be a Port of a child Domain
  bool sealed = false;

  int new_port(PortKind kind, std::string type, int op, int slot);
  void check_port(int port, const char* what) const;
};

}  // namespace rayorch::detail
