#include "bootstrap/rendezvous_wire.hpp"

#include <cstdio>
#include <cstring>

#include "asynctp/error.hpp"

namespace asynctp::bootstrap {
namespace {

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

}  // namespace

void BufferSource::read(void* data, std::size_t bytes) {
  if (bytes > remaining()) {
    throw Error(ErrorCode::backend, "rendezvous: the message ends after " +
                                        std::to_string(size_) + " bytes, " +
                                        std::to_string(bytes - remaining()) + " short");
  }
  if (bytes) std::memcpy(data, data_ + offset_, bytes);
  offset_ += bytes;
}

std::uint32_t read_u32(ByteSource& source) {
  unsigned char wire[4];
  source.read(wire, sizeof wire);
  return (std::uint32_t{wire[0]} << 24) | (std::uint32_t{wire[1]} << 16) |
         (std::uint32_t{wire[2]} << 8) | std::uint32_t{wire[3]};
}

std::string read_record(ByteSource& source, const std::string& what) {
  const std::uint32_t length = read_u32(source);
  if (length > kMaxRecordBytes) {
    throw Error(ErrorCode::backend, what + ": a record of " + std::to_string(length) +
                                        " bytes, more than the limit " +
                                        std::to_string(kMaxRecordBytes));
  }
  std::string out(length, '\0');
  source.read(out.data(), out.size());
  return out;
}

Hello read_hello(ByteSource& source) {
  Hello h;
  if (read_u32(source) != kRendezvousMagic) return h;
  h.version = read_u32(source);
  if (h.version != kRendezvousVersion) {
    h.kind = Hello::Kind::other_version;
    return h;
  }
  h.world_size = read_u32(source);
  h.rank = read_u32(source);
  h.record = read_record(source, "rendezvous: reading a rank's hello");
  h.kind = Hello::Kind::rank;
  return h;
}

std::vector<std::string> read_verdict(ByteSource& source, int world_size,
                                      const std::string& what) {
  const std::uint32_t status = read_u32(source);
  if (status == kStatusMismatch || status == kStatusTimeout) {
    std::string error = read_record(source, what);
    throw Error(status == kStatusTimeout ? ErrorCode::timeout : ErrorCode::mismatch,
                std::move(error));
  }
  if (status != kStatusOk) {
    throw Error(ErrorCode::backend, what + ": rank 0 sent an unknown status " + hex(status));
  }
  std::vector<std::string> records(static_cast<std::size_t>(world_size > 0 ? world_size : 0));
  for (std::string& r : records) r = read_record(source, what);
  return records;
}

}  // namespace asynctp::bootstrap
