// The rendezvous's messages, decoded from any source of bytes: the socket on
// a real run, a buffer in tests and the fuzzer. Everything a peer (or
// anything else on the port) sends passes through here, so this is where a
// hostile or broken sender must be refused: lengths are checked before
// anything is allocated, and a short or malformed message is an
// asynctp::Error, never a crash.
//
// On the wire (every integer a big-endian u32):
//   hello   (peer -> rank 0): magic, version, world size, rank, record
//   answer  (rank 0 -> peer): magic, version, sent at once on a hello
//   verdict (rank 0 -> peer): status ok, then world-size records; or status
//           mismatch/timeout, then the error text as one record
//   record: its length, then that many bytes (at most kMaxRecordBytes)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace asynctp::bootstrap {

// Most bytes one rank may contribute.
inline constexpr std::size_t kMaxRecordBytes = 64 * 1024;

// "ATPR": tells a stray connection (a port scanner, another service on the
// port) from a rank, both ways.
inline constexpr std::uint32_t kRendezvousMagic = 0x41545052u;
// 2: rank 0 answers each hello at once with (magic, version).
inline constexpr std::uint32_t kRendezvousVersion = 2;
inline constexpr std::uint32_t kStatusOk = 0;
inline constexpr std::uint32_t kStatusMismatch = 1;
inline constexpr std::uint32_t kStatusTimeout = 2;

// Where the bytes come from. read() fills all `bytes` or throws
// asynctp::Error (timeout, closed connection, end of the buffer).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual void read(void* data, std::size_t bytes) = 0;
};

// A buffer as a ByteSource; reading past its end throws Error(backend).
class BufferSource final : public ByteSource {
 public:
  BufferSource(const void* data, std::size_t size)
      : data_(static_cast<const unsigned char*>(data)), size_(size) {}
  void read(void* data, std::size_t bytes) override;
  std::size_t remaining() const noexcept { return size_ - offset_; }

 private:
  const unsigned char* data_;
  std::size_t size_;
  std::size_t offset_ = 0;
};

std::uint32_t read_u32(ByteSource& source);
// A record: its length, checked against kMaxRecordBytes before anything is
// allocated (Error(backend) naming `what` when over), then its bytes.
std::string read_record(ByteSource& source, const std::string& what);

struct Hello {
  enum class Kind {
    rank,           // an asynctp rank of this version: the fields below are set
    other_version,  // an asynctp rank of another version: answer it, then drop it
    not_a_rank,     // something else: drop it without a word
  };
  Kind kind = Kind::not_a_rank;
  std::uint32_t version = 0;
  std::uint32_t world_size = 0;
  std::uint32_t rank = 0;
  std::string record;
};

// Rank 0's reading of a connection's hello. Throws Error when the source
// fails or the hello is malformed (a record over the limit).
Hello read_hello(ByteSource& source);

// A peer's reading of rank 0's verdict: the `world_size` records (world_size
// is this rank's own, never from the wire), or Error(mismatch)/(timeout)
// carrying rank 0's error text, or Error(backend) for an unknown status;
// `what` says what was being done, in the errors that are not rank 0's.
std::vector<std::string> read_verdict(ByteSource& source, int world_size,
                                      const std::string& what);

}  // namespace asynctp::bootstrap
