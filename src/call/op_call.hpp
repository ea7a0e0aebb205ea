// The call layer's name for one call's arguments (core/op_call.hpp): the
// ops' rules in core read them; the call flow and the transports pass them on.
#pragma once

#include "core/op_call.hpp"

namespace asynctp::call {

using core::OpCall;

}  // namespace asynctp::call
