// The NCCL transport's agreement records are the core encoding shared with
// the CPU process transport (core/agreement_wire.hpp).
#pragma once

#include "core/agreement_wire.hpp"

namespace asynctp::nccl {

using core::decode;
using core::encode;
using core::kWireRecordBytes;
using core::WireRecord;

}  // namespace asynctp::nccl
