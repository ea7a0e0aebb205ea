#include "asynctp/launch.hpp"
#include "bootstrap/launch_env.hpp"

namespace asynctp {

std::optional<LaunchInfo> launch_info_from_environment() {
  const std::optional<bootstrap::LaunchInfo> info = bootstrap::launch_info_from_env();
  if (!info) return std::nullopt;
  return LaunchInfo{info->launcher,   info->rank,        info->world_size,
                    info->local_rank, info->master_addr, info->master_port};
}

}  // namespace asynctp
