#include "core/agreement_wire.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::core {
namespace {

constexpr std::int64_t kMagic = 0x61747032;  // "atp2": format version 2
constexpr std::int64_t kLastOp = static_cast<std::int64_t>(OpKind::matmul_reduce_scatter);
constexpr std::size_t kFields = 16;
constexpr std::size_t kErrorOffset = kFields * sizeof(std::int64_t);
constexpr std::size_t kErrorBytes = kWireRecordBytes - kErrorOffset;

enum Field : std::size_t {
  magic,
  ok,
  world_size,
  rank,
  m,
  n,
  k,
  dtype,
  b_layout,
  gathered_out,
  algorithm,
  tile_m,
  tile_n,
  op,
  grows_workspace,
};

}  // namespace

WireRecord encode(const CallRecord& record) {
  std::int64_t fields[kFields] = {};
  fields[magic] = kMagic;
  fields[ok] = record.ok ? 1 : 0;
  fields[world_size] = record.world_size;
  fields[rank] = record.problem.rank;
  fields[m] = record.problem.m;
  fields[n] = record.problem.n;
  fields[k] = record.problem.k;
  fields[dtype] = static_cast<std::int64_t>(record.problem.dtype);
  fields[b_layout] = static_cast<std::int64_t>(record.problem.b_layout);
  fields[gathered_out] = record.problem.gathered_out ? 1 : 0;
  fields[algorithm] = static_cast<std::int64_t>(record.plan.algorithm);
  fields[tile_m] = record.plan.tile_m;
  fields[tile_n] = record.plan.tile_n;
  fields[op] = static_cast<std::int64_t>(record.problem.op);
  fields[grows_workspace] = record.grows_workspace ? 1 : 0;
  WireRecord wire{};
  std::memcpy(wire.data(), fields, sizeof fields);
  std::string error = record.error;
  if (error.size() > kErrorBytes - 1) error = error.substr(0, kErrorBytes - 4) + "...";
  std::memcpy(wire.data() + kErrorOffset, error.data(), error.size());
  return wire;
}

CallRecord decode(const WireRecord& wire) {
  std::int64_t fields[kFields];
  std::memcpy(fields, wire.data(), sizeof fields);
  if (fields[magic] != kMagic) {
    throw Error(ErrorCode::backend,
                "agreement: a peer sent a record this build cannot read (different asynctp "
                "version on another rank?)");
  }
  const auto in = [](std::int64_t v, std::int64_t hi) { return v >= 0 && v <= hi; };
  if (!in(fields[dtype], 2) || !in(fields[b_layout], 1) || !in(fields[algorithm], 3) ||
      !in(fields[op], kLastOp)) {
    throw Error(ErrorCode::backend, "agreement: a peer sent a record with out-of-range fields");
  }
  CallRecord record;
  record.ok = fields[ok] != 0;
  record.world_size = static_cast<int>(fields[world_size]);
  record.problem.world_size = record.world_size;
  record.problem.rank = static_cast<int>(fields[rank]);
  record.problem.m = fields[m];
  record.problem.n = fields[n];
  record.problem.k = fields[k];
  record.problem.dtype = static_cast<DType>(fields[dtype]);
  record.problem.b_layout = static_cast<Layout>(fields[b_layout]);
  record.problem.gathered_out = fields[gathered_out] != 0;
  record.plan.algorithm = static_cast<Algorithm>(fields[algorithm]);
  record.plan.tile_m = fields[tile_m];
  record.plan.tile_n = fields[tile_n];
  record.problem.op = static_cast<OpKind>(fields[op]);
  record.grows_workspace = fields[grows_workspace] != 0;
  const char* text = reinterpret_cast<const char*>(wire.data() + kErrorOffset);
  record.error.assign(text, strnlen(text, kErrorBytes));
  return record;
}

}  // namespace asynctp::core
