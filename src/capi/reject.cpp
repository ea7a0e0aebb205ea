#include "capi/reject.hpp"

#include <exception>
#include <string>

#include "call/collective.hpp"
#include "call/transport.hpp"
#include "core/agreement.hpp"
#include "core/config.hpp"

namespace asynctp::capi {

void reject_collectively(Comm& comm, const Error& why) {
  call::Transport& transport = call::transport_of(comm);
  transport.check_usable();
  core::CallRecord mine;
  mine.world_size = transport.world_size();
  mine.error = why.what();
  std::exception_ptr local_error = std::make_exception_ptr(why);
  // The transport reads `checked` and `call` only from a record that passed.
  const call::CheckedCall unused_checked;
  const call::OpCall unused_call;
  try {
    transport.agree(mine, local_error, unused_checked, unused_call, Options{},
                    core::kDefaultWaitTimeoutMs);
  } catch (const Error& e) {
    // The agreement rethrows this rank's own rejection: the peers were told.
    if (std::string(e.what()) != mine.error) throw;
  }
}

}  // namespace asynctp::capi
