// The order part of a temporal event flow graph (t-EFG, the seed's "which
// outgoing edge to take next"): for each node, the successors taken on its
// successive visits, written as iteration partitions (first, last, stride,
// block) per destination. decode_order() rebuilds the exact node sequence.
// The order part of EFG blocks (docs/trace-format.md §19), shared by the
// writer (`strata efg --compress`) and the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::format {

// Visits first, first + stride, ... up to last (inclusive starts), each
// covering `block` consecutive visits, take the edge to `to`.
struct Partition {
  uint32_t to = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t stride = 0;
  uint64_t block = 0;
  bool operator==(const Partition&) const = default;
};

struct TemporalOrder {
  uint32_t first_node = 0;
  uint64_t length = 0;  // events
  std::vector<std::vector<Partition>> partitions;  // per node
  size_t partition_count() const;
};

// seq holds node ids < num_nodes.
TemporalOrder encode_order(const std::vector<uint32_t>& seq, size_t num_nodes);
// Throws std::runtime_error when the partitions do not describe one walk.
std::vector<uint32_t> decode_order(const TemporalOrder& t);

}  // namespace strata::format
