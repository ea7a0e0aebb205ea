#include "hip/device_topology.hpp"

namespace asynctp::hip {
namespace {

constexpr int kShaderEnginesPerXcd = 4;

int cus_per_xcd(const std::string& gfx) {
  if (gfx == "gfx942") return 38;
  if (gfx == "gfx950") return 32;
  return 0;
}

}  // namespace

std::optional<int> shader_engines(const std::string& gfx, int cus) {
  const int per_xcd = cus_per_xcd(gfx);
  if (per_xcd == 0 || cus <= 0 || cus % per_xcd != 0) return std::nullopt;
  return (cus / per_xcd) * kShaderEnginesPerXcd;
}

std::optional<int> native_grid(const std::string& gfx, int cus) {
  const std::optional<int> engines = shader_engines(gfx, cus);
  if (!engines) return std::nullopt;
  // CUs are spread evenly over the shader engines of an XCD (38 = 10+10+9+9
  // on CDNA3): the rule's (CUs per engine - 1) x engines is CUs - engines.
  return kNativeOccupancy * (cus - *engines);
}

}  // namespace asynctp::hip
