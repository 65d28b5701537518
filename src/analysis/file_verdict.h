// What a file is to a deep-learning job (its role) and the figures that
// decided it: the verdict classify_file (analyze.h) gives a file. Apart from
// analyze.h so that the finished job's index (aggregate.h) can keep them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace strata::analysis {

// File roles (deep-learning I/O patterns).
// kData and kOutput are the roles of a job that is not a training (no epoch
// tags, no DataLoader events): its data files are read as a data set, but
// there is no train/validation split to name, and its large outputs are not
// checkpoints unless their names say so.
enum class Role { kTrainData, kValData, kData, kCheckpoint, kOutput, kConfig, kLibrary, kLog, kOther };
const char* role_name(Role r);
// The roles of a data set's files (rolled up by directory, staged, judged).
inline bool dataset_role(Role r) { return r == Role::kTrainData || r == Role::kValData || r == Role::kData; }
// The roles the file lists show one by one (others are summed).
inline bool listed_role(Role r) { return dataset_role(r) || r == Role::kCheckpoint || r == Role::kOutput; }

struct FileVerdict {
  Role role = Role::kOther;
  std::vector<std::string> evidence;
  size_t nprocs = 0;
  bool shared = false;          // accessed by more than one process
  // Literals (string_view: no copy per file).
  std::string_view access;      // "read-only", "write-only", "read-write", "metadata-only"
  std::string_view read_extent; // "whole", "partial", "unknown" (per reader, majority)
  std::string_view pattern;     // "sequential", "strided", "random", "mixed", "unknown"
  double reread = -1;           // bytes read / file extent (-1 unknown)
  // reread split in opens x per_open: a file read whole once per epoch has
  // per_open 1; an archive whose index is read again (npz) reads ~1.05 per open.
  double per_open = -1;         // reread / (opens - fdopens) (-1 unknown or no opens)
  bool metadata_bound = false;  // metadata time > data time
};

}  // namespace strata::analysis
