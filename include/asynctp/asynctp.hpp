// Umbrella header.
#pragma once

#include "asynctp/comm.hpp"
#include "asynctp/cpu.hpp"
#include "asynctp/error.hpp"
#include "asynctp/group.hpp"
#include "asynctp/ops.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"
#include "asynctp/trace.hpp"
