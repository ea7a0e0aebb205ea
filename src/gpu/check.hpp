// Runtime statuses as asynctp errors, for either runtime (gpu/runtime.hpp).
#pragma once

#include "gpu/runtime.hpp"

namespace asynctp::gpu {

// Throws Error(backend) "<CUDA|HIP> <what>: <name> (<description>)" unless
// the status is success; clears a non-sticky error first, so later calls
// start clean.
void check(rt::Status status, const char* what);

// Stream order, checked: `stream` waits for `event`; `event` records where
// `stream` is. `what` names the step in the error.
inline void wait(rt::StreamHandle stream, rt::EventHandle event, const char* what) {
  check(rt::stream_wait_event(stream, event), what);
}
inline void record(rt::EventHandle event, rt::StreamHandle stream, const char* what) {
  check(rt::event_record(event, stream), what);
}

}  // namespace asynctp::gpu
