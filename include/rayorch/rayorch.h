// Umbrella header of the RayOrch C++ public API. Users write `namespace ro = rayorch;`.
#pragma once

#include "rayorch/column.h"
#include "rayorch/errors.h"
#include "rayorch/executor.h"
#include "rayorch/function.h"
#include "rayorch/metrics.h"
#include "rayorch/module.h"
#include "rayorch/ops.h"
#include "rayorch/outcome.h"
#include "rayorch/port.h"
#include "rayorch/program.h"
#include "rayorch/recovery.h"
#include "rayorch/run_options.h"
#include "rayorch/sink.h"
#include "rayorch/testing.h"
