// The options and ASYNCTP_* settings every call resolves (core/config):
// any text in the environment, any numbers in Options. resolve_options
// returns settings that keep their rules (positive timeout, tiles multiples
// of 8) or throws Error(invalid_argument); parse_integer agrees with its
// definition; a deadline from any accepted timeout is not in the past.
#include <fuzzer/FuzzedDataProvider.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "asynctp/error.hpp"
#include "core/config.hpp"
#include "core/deadline.hpp"
#include "fuzz_env.hpp"

using namespace asynctp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Options options;
  if (in.ConsumeBool()) options.wait_timeout_ms = in.ConsumeIntegral<std::int64_t>();
  if (in.ConsumeBool()) options.tile_m = in.ConsumeIntegral<std::int64_t>();
  if (in.ConsumeBool()) options.tile_n = in.ConsumeIntegral<std::int64_t>();
  const std::string text = in.ConsumeRandomLengthString(64);
  const std::vector<std::uint8_t> rest = in.ConsumeRemainingBytes<std::uint8_t>();
  const asynctp_fuzz::FuzzEnv env(rest.data(), rest.size(),
                                  {"ASYNCTP_ALGO", "ASYNCTP_WAIT_TIMEOUT_MS", "ASYNCTP_TILE_M",
                                   "ASYNCTP_TILE_N"});

  if (const auto value = core::parse_integer(text)) {
    // Base 10, the whole text: printing the value back gives the digits.
    if (text.find_first_not_of(" \t\n\v\f\r+-0123456789") != std::string::npos) std::abort();
  }
  try {
    (void)parse_algorithm(text, "fuzz");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::invalid_argument) std::abort();
  }
  try {
    const core::ResolvedOptions r = core::resolve_options(options, env.lookup());
    if (r.wait_timeout_ms <= 0) std::abort();
    if (r.tile_m && (*r.tile_m <= 0 || *r.tile_m % 8 != 0)) std::abort();
    if (r.tile_n && (*r.tile_n <= 0 || *r.tile_n % 8 != 0)) std::abort();
    if (core::deadline_after(r.wait_timeout_ms) < std::chrono::steady_clock::now()) std::abort();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::invalid_argument) std::abort();
  }
  return 0;
}
