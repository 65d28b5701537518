#include "format/temporal_order.h"

#include <stdexcept>
#include <string>

namespace strata::format {

size_t TemporalOrder::partition_count() const {
  size_t n = 0;
  for (const auto& p : partitions) n += p.size();
  return n;
}

namespace {

// Runs of equal successors, then consecutive runs of one destination with
// equal length and equal spacing folded into one partition. A partition only
// grows while the runs of other destinations between its blocks stay outside
// it, which holds because runs never overlap.
std::vector<Partition> partition_choices(const std::vector<uint32_t>& choices) {
  struct Run {
    uint32_t to;
    uint64_t start, length;
  };
  std::vector<Run> runs;
  for (uint64_t i = 0; i < choices.size(); ++i) {
    if (!runs.empty() && runs.back().to == choices[i]) ++runs.back().length;
    else runs.push_back({choices[i], i, 1});
  }
  std::vector<Partition> out;
  std::vector<size_t> open_of;  // index into out of the partition still growing, per destination
  auto open_for = [&](uint32_t to) -> Partition* {
    for (size_t k : open_of)
      if (out[k].to == to) return &out[k];
    return nullptr;
  };
  for (const Run& r : runs) {
    Partition* p = open_for(r.to);
    if (p && p->block == r.length) {
      const uint64_t gap = r.start - p->last;
      if (p->first == p->last || gap == p->stride) {  // second block fixes the stride
        p->stride = gap;
        p->last = r.start;
        continue;
      }
    }
    out.push_back({r.to, r.start, r.start, 0, r.length});
    bool replaced = false;
    for (size_t& k : open_of)
      if (out[k].to == r.to) {
        k = out.size() - 1;
        replaced = true;
      }
    if (!replaced) open_of.push_back(out.size() - 1);
  }
  return out;
}

}  // namespace

TemporalOrder encode_order(const std::vector<uint32_t>& seq, size_t num_nodes) {
  TemporalOrder t;
  t.partitions.resize(num_nodes);
  t.length = seq.size();
  if (seq.empty()) return t;
  t.first_node = seq[0];
  std::vector<std::vector<uint32_t>> choices(num_nodes);
  for (size_t i = 0; i + 1 < seq.size(); ++i) choices[seq[i]].push_back(seq[i + 1]);
  for (size_t v = 0; v < num_nodes; ++v) t.partitions[v] = partition_choices(choices[v]);
  return t;
}

std::vector<uint32_t> decode_order(const TemporalOrder& t) {
  const size_t n = t.partitions.size();
  std::vector<std::vector<uint32_t>> choices(n);
  for (size_t v = 0; v < n; ++v)
    for (const Partition& p : t.partitions[v]) {
      if (p.to >= n || p.block == 0 || p.last < p.first || (p.last > p.first && p.stride < p.block))
        throw std::runtime_error("t-EFG: bad partition at node " + std::to_string(v));
      // Every bound is checked without adding first: a corrupt block's values
      // are any 64-bit numbers, and a sum that wraps would index anywhere.
      for (uint64_t s = p.first;; s += p.stride) {
        if (p.block > t.length || s > t.length - p.block)
          throw std::runtime_error("t-EFG: partition beyond the sequence at node " + std::to_string(v));
        if (choices[v].size() < s + p.block) choices[v].resize(s + p.block, UINT32_MAX);
        for (uint64_t b = 0; b < p.block; ++b) {
          if (choices[v][s + b] != UINT32_MAX) throw std::runtime_error("t-EFG: overlapping partitions at node " + std::to_string(v));
          choices[v][s + b] = p.to;
        }
        if (s == p.last || p.stride == 0) break;
        if (s > p.last || p.stride > p.last - s)
          throw std::runtime_error("t-EFG: partition stride misses its last at node " + std::to_string(v));
      }
    }
  std::vector<uint32_t> seq;
  if (t.length == 0) return seq;
  if (t.first_node >= n) throw std::runtime_error("t-EFG: bad first node");
  seq.reserve(t.length);
  std::vector<uint64_t> visit(n, 0);
  uint32_t cur = t.first_node;
  seq.push_back(cur);
  while (seq.size() < t.length) {
    if (visit[cur] >= choices[cur].size() || choices[cur][visit[cur]] == UINT32_MAX)
      throw std::runtime_error("t-EFG: no successor for visit " + std::to_string(visit[cur]) + " of node " + std::to_string(cur));
    cur = choices[cur][visit[cur]++];
    seq.push_back(cur);
  }
  return seq;
}

}  // namespace strata::format
