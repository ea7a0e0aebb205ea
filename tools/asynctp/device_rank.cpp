#include "device_rank.hpp"

#include <stdexcept>

#include "check.hpp"

namespace asynctp::tool {
namespace {

std::size_t bytes_of(const TensorView& view) {
  return static_cast<std::size_t>(view.numel()) * element_size(view.dtype);
}

// The device twin of a host view: same shape, dtype and strides.
TensorView on_device(const TensorView& host, const DeviceBuffer& buffer, int device) {
  TensorView view = host;
  view.data = buffer.data();
  view.device = {gpu::rt::kDeviceKind, device};
  return view;
}

}  // namespace

DeviceRank::DeviceRank(const RankData& h, int device, const std::string& who)
    : a(bytes_of(h.a_shard), who + "A shard"),
      b(bytes_of(h.b), who + "B"),
      c(bytes_of(h.c), who + "C"),
      gathered(bytes_of(h.gathered), who + "gathered A"),
      views{on_device(h.a_shard, a, device), on_device(h.b, b, device), on_device(h.c, c, device),
            on_device(h.gathered, gathered, device)} {
  a.upload(h.a_shard.data, stream.get(), who + "A shard");
  b.upload(h.b.data, stream.get(), who + "B");
  device_check(gpu::rt::stream_synchronize(stream.get()), who + "input upload");
}

void DeviceRank::upload_outputs(const RankData& h) {
  c.upload(h.c.data, stream.get(), "poisoned C");
  gathered.upload(h.gathered.data, stream.get(), "poisoned gathered A");
  device_check(gpu::rt::stream_synchronize(stream.get()), "poisoning the outputs");
}

void DeviceRank::download_outputs(const RankData& h) {
  c.download(h.c.data, stream.get(), "C");
  gathered.download(h.gathered.data, stream.get(), "gathered A");
  device_check(gpu::rt::stream_synchronize(stream.get()), "fetching the outputs");
}

void HeldRanks::place(int rank, int device) {
  ranks_[index(rank)] = std::make_unique<DeviceRank>((*host_)[index(rank)], device,
                                                     "rank " + std::to_string(rank) + "'s ");
}

RankViews HeldRanks::views(int rank) const {
  const auto& held = ranks_.at(index(rank));
  if (!held) throw std::logic_error("rank " + std::to_string(rank) + " is not placed here");
  return held->views;
}

void* HeldRanks::stream(int rank) const noexcept {
  const auto i = index(rank);
  return i < ranks_.size() && ranks_[i] ? ranks_[i]->stream.get() : nullptr;
}

// The host pattern is the one check_outputs recognises as unwritten; copying
// it keeps one definition of the poison.
void HeldRanks::poison_host() { poison_outputs(*host_); }

void HeldRanks::upload_outputs(int rank) {
  ranks_[index(rank)]->upload_outputs((*host_)[index(rank)]);
}

void HeldRanks::download_outputs(int rank) {
  ranks_[index(rank)]->download_outputs((*host_)[index(rank)]);
}

}  // namespace asynctp::tool
