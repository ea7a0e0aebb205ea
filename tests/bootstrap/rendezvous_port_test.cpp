// The rendezvous port: a port of asynctp's own, never the TCPStore's
// MASTER_PORT (torchrun's agent and init_process_group(env://) serve it for
// the whole job).
//
//   RendezvousPort.DefaultIsNeverMasterPort       the derivation, every port
//   RendezvousPort.BesideATcpStoreOnMasterPort    torchrun's picture: MASTER_PORT held,
//                                                 three ranks meet on the default port
//   RendezvousPort.TakenPortFailsRank0AtOnce      rank 0's bind fails in well under a
//                                                 second, naming the port and the variable
//                                                 (default and explicit port)
//   RendezvousPort.PeersOfATakenPortFailInTime    the whole job beside a silent squatter:
//                                                 rank 0 at once, the peers within the
//                                                 bound, each naming what it waited for
//   RendezvousPort.PeersTellAnotherServiceQuickly a squatter that closes, or answers in
//                                                 its own protocol: the peer fails at once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/launch_env.hpp"
#include "bootstrap/rendezvous_support.hpp"

namespace asynctp::bootstrap {
namespace {

using namespace test;

core::EnvLookup lookup(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

// Rank `rank` of `world` as torchrun describes it, plus `extra` variables.
LaunchInfo torchrun_rank(int rank, int world, int master_port,
                         std::map<std::string, std::string> extra = {}) {
  extra.insert({{"RANK", std::to_string(rank)},
                {"WORLD_SIZE", std::to_string(world)},
                {"LOCAL_RANK", std::to_string(rank)},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(master_port)}});
  const auto info = launch_info_from_env(lookup(extra));
  EXPECT_TRUE(info.has_value());
  return info.value_or(LaunchInfo{});
}

TEST(RendezvousPort, DefaultIsNeverMasterPort) {
  EXPECT_EQ(29501, default_rendezvous_port(29500));
  EXPECT_EQ(2, default_rendezvous_port(1));
  EXPECT_EQ(65534, default_rendezvous_port(65535));
  for (int port = 1; port <= 65535; ++port) {
    const int r = default_rendezvous_port(port);
    ASSERT_NE(port, r);
    ASSERT_GE(r, 1);
    ASSERT_LE(r, 65535);
  }
}

TEST(RendezvousPort, BesideATcpStoreOnMasterPort) {
  Fd store;
  const int master_port = held_port_with_free_successor(&store);
  ASSERT_GT(master_port, 0);
  constexpr int kWorld = 3;
  std::vector<LaunchInfo> infos;
  std::vector<std::string> records;
  for (int r = 0; r < kWorld; ++r) {
    infos.push_back(torchrun_rank(r, kWorld, master_port));
    EXPECT_EQ(master_port + 1, infos.back().rendezvous_port);
    EXPECT_EQ("MASTER_PORT + 1", infos.back().rendezvous_port_source);
    records.push_back("rank " + std::to_string(r));
  }
  const auto out = run_all(infos, records, 10'000);
  for (int r = 0; r < kWorld; ++r) {
    const Outcome& o = out[static_cast<std::size_t>(r)];
    ASSERT_FALSE(o.failed) << "rank " << r << ": " << o.message;
    EXPECT_EQ(records, o.records);
  }
}

TEST(RendezvousPort, TakenPortFailsRank0AtOnce) {
  const Fd squatter = listen_any(0);
  ASSERT_GE(squatter.fd, 0);
  const int taken = port_of(squatter);
  ASSERT_GT(taken, 1);
  const struct {
    LaunchInfo info;
    const char* names;
  } cases[] = {
      {torchrun_rank(0, 2, taken - 1), "(MASTER_PORT + 1)"},
      {torchrun_rank(0, 2, taken - 1, {{"ASYNCTP_RENDEZVOUS_PORT", std::to_string(taken)}}),
       "(ASYNCTP_RENDEZVOUS_PORT)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.names);
    ASSERT_EQ(taken, c.info.rendezvous_port);
    const Outcome o = run_one(c.info, "r0", 60'000);
    ASSERT_TRUE(o.failed);
    EXPECT_EQ(ErrorCode::backend, o.code);
    EXPECT_LT(o.seconds, 1.0) << "rank 0 must not wait when it cannot listen";
    EXPECT_TRUE(contains(o.message, "port " + std::to_string(taken) + " " + c.names)) << o.message;
    EXPECT_TRUE(contains(o.message, "choose a free one with ASYNCTP_RENDEZVOUS_PORT")) << o.message;
  }
}

TEST(RendezvousPort, PeersOfATakenPortFailInTime) {
  // Listens and never accepts: connections complete in its backlog and
  // nobody answers them, as with a busy or wedged service.
  Fd squatter = listen_any(0);
  ASSERT_GE(squatter.fd, 0);
  const int taken = port_of(squatter);
  constexpr std::int64_t kTimeoutMs = 1'000;
  const std::vector<LaunchInfo> infos = {torchrun_rank(0, 3, taken - 1),
                                         torchrun_rank(1, 3, taken - 1),
                                         torchrun_rank(2, 3, taken - 1)};
  const auto out = run_all(infos, {"a", "b", "c"}, kTimeoutMs);
  ASSERT_TRUE(out[0].failed);
  EXPECT_LT(out[0].seconds, 0.5) << out[0].message;
  EXPECT_TRUE(contains(out[0].message, "ASYNCTP_RENDEZVOUS_PORT")) << out[0].message;
  for (int r = 1; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const Outcome& o = out[static_cast<std::size_t>(r)];
    ASSERT_TRUE(o.failed);
    EXPECT_EQ(ErrorCode::timeout, o.code) << o.message;
    // The connect deadline, or two seconds after connecting: not minutes.
    EXPECT_LT(o.seconds, 4.0);
    EXPECT_TRUE(contains(o.message, "waiting for rank 0 at 127.0.0.1, port " +
                                        std::to_string(taken) + " (MASTER_PORT + 1)"))
        << o.message;
    EXPECT_TRUE(contains(o.message, "to answer its hello")) << o.message;
    EXPECT_TRUE(contains(o.message, "ASYNCTP_RENDEZVOUS_PORT chooses another")) << o.message;
  }
}

TEST(RendezvousPort, PeersTellAnotherServiceQuickly) {
  const struct {
    const char* name;
    std::string reply;  // what the service sends back; empty: it closes
    const char* needle;
  } services[] = {
      {"closes", "", "the other side closed the connection"},
      {"answers in its own protocol", "HTTP/1.0 400 Bad Request\r\n\r\n",
       "is not asynctp's rendezvous"},
  };
  for (const auto& service : services) {
    SCOPED_TRACE(service.name);
    Fd listener = listen_any(0);
    ASSERT_GE(listener.fd, 0);
    const int port = port_of(listener);
    Joined server{std::thread([&] {
      const Fd s = accept_within(listener, std::chrono::seconds(5));
      if (s.fd < 0) return;
      char hello[5 * 4 + 2];                   // five words and the record "r1": all of it, so
      (void)recv_raw(s, hello, sizeof hello);  // that closing sends FIN, not RST
      if (!service.reply.empty()) (void)send_raw(s, service.reply.data(), service.reply.size());
    })};
    // A long timeout: the peer must not need it.
    const Outcome o = run_one(info_for(1, 2, port), "r1", 60'000);
    server.thread.join();
    ASSERT_TRUE(o.failed);
    EXPECT_EQ(ErrorCode::backend, o.code) << o.message;
    EXPECT_LT(o.seconds, 2.0);
    EXPECT_TRUE(contains(o.message, service.needle)) << o.message;
    EXPECT_TRUE(contains(o.message, "port " + std::to_string(port))) << o.message;
  }
}

}  // namespace
}  // namespace asynctp::bootstrap
