// The plan: which records this rank reads in an epoch, in which order. A
// pure function of (records, seed, epoch, rank, world size, order options),
// so any worker count, restart or resume sees the same sequence.
#include <algorithm>
#include <numeric>

#include "base/enum_names.h"
#include "sluice/pipeline.h"
#include "sluice/random.h"

namespace sluice {
namespace {

constexpr uint64_t kOrderStream = 0x6f72646572ull;  // "order"

void shuffle(std::vector<uint32_t>& v, CounterRng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

std::vector<uint32_t> global_order(uint32_t n, CounterRng& rng) {
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  shuffle(perm, rng);
  return perm;
}

// Blocks of neighbouring records in a random block order; records shuffled
// within each group of `group` consecutive blocks of that order. Reads stay
// within a few blocks of each other, so a shard is read nearly in sequence.
std::vector<uint32_t> quasi_order(uint32_t n, uint32_t block, uint32_t group, CounterRng& rng) {
  uint32_t blocks = (n + block - 1) / block;
  std::vector<uint32_t> block_order(blocks);
  std::iota(block_order.begin(), block_order.end(), 0u);
  shuffle(block_order, rng);
  std::vector<uint32_t> out;
  out.reserve(n);
  for (uint32_t g = 0; g < blocks; g += group) {
    size_t first = out.size();
    for (uint32_t b = g; b < std::min(blocks, g + group); ++b) {
      uint32_t start = block_order[b] * block;
      for (uint32_t r = start; r < std::min(n, start + block); ++r) out.push_back(r);
    }
    std::vector<uint32_t> chunk(out.begin() + static_cast<long>(first), out.end());
    shuffle(chunk, rng);
    std::copy(chunk.begin(), chunk.end(), out.begin() + static_cast<long>(first));
  }
  return out;
}

// tf.data's shuffle buffer: fill `size` records, then repeatedly emit a
// random one and replace it with the next record in storage order.
std::vector<uint32_t> buffer_order(uint32_t n, uint32_t size, CounterRng& rng) {
  std::vector<uint32_t> buf;
  std::vector<uint32_t> out;
  out.reserve(n);
  uint32_t next = 0;
  while (next < n && buf.size() < size) buf.push_back(next++);
  while (!buf.empty()) {
    size_t k = rng.below(buf.size());
    out.push_back(buf[k]);
    if (next < n) {
      buf[k] = next++;
    } else {
      buf[k] = buf.back();
      buf.pop_back();
    }
  }
  return out;
}

}  // namespace

namespace {
constexpr detail::EnumName<Order> kOrders[] = {{Order::kGlobal, "global"},
                                               {Order::kQuasi, "quasi"},
                                               {Order::kBuffer, "buffer"},
                                               {Order::kNone, "none"}};
}  // namespace

std::string_view order_name(Order order) {
  return detail::enum_name(order, kOrders);
}

Result<Order> parse_order(std::string_view name) {
  return detail::parse_enum_name(name, kOrders, "unknown order");
}

std::vector<uint32_t> plan_epoch(uint64_t records, const PipelineOptions& o, uint64_t epoch) {
  const uint32_t n = static_cast<uint32_t>(records);
  if (n == 0) return {};
  // Every rank computes the same epoch order from the same key, then takes
  // its own strided part: disjoint by construction.
  CounterRng rng(hash_key(o.seed, epoch, kOrderStream));
  std::vector<uint32_t> order;
  switch (o.order) {
    case Order::kNone:
      order.resize(n);
      std::iota(order.begin(), order.end(), 0u);
      break;
    case Order::kGlobal: order = global_order(n, rng); break;
    case Order::kQuasi:
      order = quasi_order(n, static_cast<uint32_t>(std::max(1, o.quasi_block)),
                          static_cast<uint32_t>(std::max(1, o.quasi_group)), rng);
      break;
    case Order::kBuffer:
      order = buffer_order(n, static_cast<uint32_t>(std::max(1, o.shuffle_buffer)), rng);
      break;
  }
  const uint64_t world = static_cast<uint64_t>(std::max(1, o.world_size));
  const uint64_t per_rank = o.drop_last ? n / world : (n + world - 1) / world;
  std::vector<uint32_t> mine;
  mine.reserve(per_rank);
  for (uint64_t k = 0; k < per_rank; ++k) {
    // Padding wraps around to the start of the order, as PyTorch's
    // DistributedSampler does.
    mine.push_back(order[(k * world + static_cast<uint64_t>(o.rank)) % n]);
  }
  return mine;
}

}  // namespace sluice
