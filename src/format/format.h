// The strata trace format: constants and fixed-layout structures shared by the
// runtime that writes traces and every tool that reads them (Darshan's model: one
// on-disk format header for both sides). docs/trace-format.md is the normative
// spec; this header must agree with it. Depends on nothing but the C++ library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::format {

// ---- File level ------------------------------------------------------------
// A trace is a directory; each traced process image writes one file named
// "<host>-<pid>-<start_mono_ns>.strata". The file starts with FileHeader and is
// followed by blocks until EOF. The last block of a cleanly closed file is a
// FOOTER whose final 16 bytes are the Trailer.
inline constexpr char kFileMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', '\0', '\n'};
inline constexpr uint16_t kVersionMajor = 1;
inline constexpr uint16_t kVersionMinor = 2;  // 1.1: codec kZstdPrefix, column encoding kPacked; 1.2: column kMemAlign
// Files written by `strata efg --compress` (EFG blocks) carry minor 3; the
// runtime writes kVersionMinor.
inline constexpr uint16_t kVersionMinorEfg = 3;
inline constexpr const char* kFileSuffix = ".strata";
// A process that cannot create its trace file (an unwritable directory after
// a change of user, a full disk) appends one text line here at exit:
// "pid=P ppid=Q errno=E lost=N exe=PATH\n". `strata run` creates the file,
// writable by all, before starting the command; the runtime never creates it.
inline constexpr const char* kUnwritableLog = "unwritable-processes.log";

struct FileHeader {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;  // sizeof(FileHeader); readers skip unknown tail bytes
  uint64_t flags;        // reserved, 0
  uint64_t reserved;     // 0
};
static_assert(sizeof(FileHeader) == 32);

// ---- Blocks ----------------------------------------------------------------
inline constexpr uint32_t kBlockMagic = 0x4B425453;  // "STBK" little-endian

enum class BlockType : uint8_t {
  kProcess = 1,  // process metadata, always the first block
  kDict = 2,     // string, name, context and thread definitions
  kEvents = 3,   // columnar events of one thread
  kStats = 4,    // cumulative counts: events written, events dropped
  kFooter = 5,   // block index + trailer; last block of a closed file
  kProfile = 6,  // profile mode: Darshan-style counters per file (the last one wins)
  kEfg = 7,      // (1.3) events as temporal event flow graphs, in place of EVENTS blocks
                 //   (`strata efg --compress`; layout in format/efg_block.h and the spec)
};

// kNone: the payload as is. kZstd: one zstd frame holding the whole payload.
// kZstdPrefix (1.1): one zstd frame followed by raw bytes; the payload is the
// frame's decompressed content followed by those bytes (raw_size = both). The
// runtime uses it for EVENTS blocks: the packed time columns at the end of the
// payload are stored raw (zstd gains nothing on them and costs the most there).
enum class Codec : uint8_t { kNone = 0, kZstd = 1, kZstdPrefix = 2 };

struct BlockHeader {
  uint32_t magic;        // kBlockMagic
  uint8_t type;          // BlockType
  uint8_t codec;         // Codec of the payload
  uint16_t flags;        // reserved, 0
  uint32_t stored_size;  // payload bytes on disk, following this header
  uint32_t raw_size;     // payload bytes after decompression
  uint32_t count;        // events (kEvents) or entries (kDict); 0 otherwise
  uint32_t header_hash;  // low 32 bits of XXH3_64 over the 20 bytes above
  uint64_t payload_hash; // XXH3_64 of the stored payload bytes
};
static_assert(sizeof(BlockHeader) == 32);

// Low 32 bits of XXH3_64 over the header bytes before header_hash; declared here,
// defined in encoder.cc / by readers (any XXH3 implementation gives the same).
uint32_t header_hash_of(const BlockHeader& h);

inline constexpr uint32_t kMaxBlockPayload = 64u << 20;  // sanity bound for readers

// ---- Dictionary entries (kDict payload) -------------------------------------
// Each entry: u8 kind, varint id, then kind-specific fields. Ids are per file,
// start at 1 (0 means "none"), and are defined before any block that uses them.
enum class DictKind : uint8_t {
  kString = 1,   // varint len, bytes (UTF-8, not NUL-terminated)
  kName = 2,     // varint name_sid, varint category_sid, varint field_mask, u8 EventKind
  kContext = 3,  // varint n, n x (varint key_sid, u8 TagType, value)
  kThread = 4,   // varint tid, varint name_sid (0 = unnamed)
  kMetadata = 5, // varint key_sid, varint value_sid (process metadata set at run time)
};

enum class TagType : uint8_t { kInt = 0, kString = 1 };  // int: zigzag varint; string: varint sid

enum class EventKind : uint8_t {
  kComplete = 0,  // has ts and dur
  kInstant = 1,   // dur is 0
  kCounter = 2,   // value in the size column
  kBegin = 3,     // async begin (dur 0), id in the offset column
  kEnd = 4,       // async end (dur 0), id in the offset column
};

// Which optional columns carry meaning for events of a name (field_mask bits).
enum Field : uint32_t {
  kFieldFd = 1u << 0,
  kFieldPath = 1u << 1,
  kFieldOffset = 1u << 2,
  kFieldSize = 1u << 3,
  kFieldRet = 1u << 4,
  kFieldErrno = 1u << 5,
  kFieldValue = 1u << 6,  // counter value (stored in the size column)
};

// ---- Event columns (kEvents payload, after decompression) --------------------
// varint tid, varint base_ts, varint ncols, ncols x (u8 column id, u8 encoding,
// varint byte length), then the column bytes in the same order (any order of
// ids; readers match columns by id). Every column holds exactly `count` values
// (count is in the block header). The comments give each column's value, which
// the column encoding then stores.
enum class Column : uint8_t {
  kName = 1,    // name id
  // Times (ts, dur, base_ts) are in the file's clock ticks: ns, or TSC-based
  // ticks (the runtime uses 8 cycles) when the PROCESS block's tick_q32 is not 0 (ns = start_mono_ns +
  // ((ticks - start_ticks) * tick_q32 >> 32)).
  kTs = 2,      // zigzag of: start ticks minus the previous event's end (start + dur); first: minus base_ts
  kDur = 3,     // ticks
  kFd = 4,      // zigzag fd (-1 = none)
  kPath = 5,    // string id (0 = none)
  kOffset = 6,  // delta = offset minus the previous event's end offset, which is its
                //   offset + ret when offset >= 0 and ret > 0, else its offset (first: minus 0);
                //   offset -1 = none. Sequential access has delta 0. Stored through a
                //   two-entry cache of recent deltas (d1 most recent, d2 before it, both 0
                //   at block start): value 0 = delta d1; 1 = delta d2 (then d1, d2 swap);
                //   v >= 2 = new delta unzigzag(v - 2) (then d2 = d1, d1 = delta). Constant
                //   strides store 0s, alternating strides 1s.
  kSize = 7,    // zigzag (-1 = none)
  kRet = 8,     // zigzag of ret - max(size, 0)
  kErrno = 9,   // errno (0 = success)
  kCtx = 10,    // context id (0 = no tags)
  kMemAlign = 11,  // (1.2) 0 = not recorded; else 1 + the number of trailing zero bits of the
                   //   memory buffer's address, at most 1 + kMemAlignMaxLog2 (a buffer aligned
                   //   to 2^kMemAlignMaxLog2 or more). readv/writev family: the least aligned
                   //   iovec. Files without the column: 0 for every event.
};
inline constexpr int kNumColumns = 11;
inline constexpr int kMemAlignMaxLog2 = 12;
// kMemAlign value of a buffer address (the runtime's hot path: or, tzcnt, add).
inline constexpr uint32_t mem_align_code(uint64_t address) {
  return 1u + static_cast<uint32_t>(__builtin_ctzll(address | (uint64_t{1} << kMemAlignMaxLog2)));
}
// The alignment in bytes a kMemAlign value (not 0) stands for, and back
// (readers of text formats that carry bytes: "mem_align" in JSON and .pfw).
inline constexpr uint64_t mem_align_bytes(uint32_t code) { return uint64_t{1} << (code - 1); }
inline constexpr uint32_t mem_align_code_of_bytes(uint64_t bytes) { return bytes ? mem_align_code(bytes) : 0; }
// Whether a kMemAlign value (not 0) shows a buffer aligned to `alignment` (a
// power of two). A buffer aligned to 2^kMemAlignMaxLog2 counts as aligned to
// any larger alignment too (the value cannot tell).
inline constexpr bool mem_aligned_to(uint32_t code, uint64_t alignment) {
  return code > kMemAlignMaxLog2 || alignment <= (uint64_t{1} << (code - 1));
}
// How a column stores its `count` unsigned 64-bit values (readers accept every
// encoding for every column):
//   kVarint: `count` varints.
//   kRunLength: (varint value, varint run) pairs, run >= 1, runs adding up to `count`.
//   kPacked (1.1): patched frame-of-reference bit packing. Frame j holds values
//     [128 j, min(128 j + 128, count)) (k values): u8 w (0..64), varint base,
//     u8 nexc (0..k), ceil(k * w / 8) bytes holding value i's low w bits of
//     (v_i - base) at bit offset i * w (LSB first, little-endian bytes), then nexc
//     exceptions (u8 index, strictly increasing and < k; varint high, < 2^(64 - w)):
//     v_index = base + (low_index | high << w). w = 64 has no exceptions.
enum class ColumnEncoding : uint8_t { kVarint = 0, kRunLength = 1, kPacked = 2 };
inline constexpr uint32_t kPackedFrame = 128;  // values per kPacked frame
// The encoding the runtime writes for each column (index: id - 1). ts and dur
// are packed and come last in the payload (directory order: kColumnOrder), so
// that a kZstdPrefix block compresses everything before them. The offset
// column is kRunLength instead when that is smaller for the block.
inline constexpr ColumnEncoding kColumnEncoding[kNumColumns] = {
    ColumnEncoding::kRunLength, ColumnEncoding::kPacked,    ColumnEncoding::kPacked,    ColumnEncoding::kRunLength,
    ColumnEncoding::kRunLength, ColumnEncoding::kVarint,    ColumnEncoding::kRunLength, ColumnEncoding::kRunLength,
    ColumnEncoding::kRunLength, ColumnEncoding::kRunLength, ColumnEncoding::kRunLength};
inline constexpr Column kColumnOrder[kNumColumns] = {Column::kName, Column::kFd,    Column::kPath,  Column::kOffset,
                                                     Column::kSize, Column::kRet,   Column::kErrno, Column::kCtx,
                                                     Column::kMemAlign, Column::kTs, Column::kDur};

// ---- Clock ticks ------------------------------------------------------------
// A file's clock ticks to CLOCK_MONOTONIC ns (PROCESS block: start_ticks,
// tick_q32, start_mono_ns; tick_q32 0: ticks are ns).
inline uint64_t ticks_to_ns(uint64_t ticks, uint64_t start_ticks, uint64_t tick_q32, uint64_t start_mono_ns) {
  if (tick_q32 == 0) return ticks;
  const int64_t d = static_cast<int64_t>(ticks - start_ticks);
  const __int128 ns = static_cast<__int128>(d) * static_cast<__int128>(tick_q32);
  return start_mono_ns + static_cast<uint64_t>(static_cast<int64_t>(ns >> 32));
}
// The smallest tick count ticks_to_ns maps to ns, if any (tools that store
// times in ticks again: `strata efg --compress`).
inline bool ns_to_ticks(uint64_t ns, uint64_t start_ticks, uint64_t tick_q32, uint64_t start_mono_ns, uint64_t& ticks) {
  if (tick_q32 == 0) {
    ticks = ns;
    return true;
  }
  const __int128 num = static_cast<__int128>(static_cast<int64_t>(ns - start_mono_ns)) * (__int128{1} << 32);
  const __int128 q = tick_q32;
  const __int128 d = num >= 0 ? (num + q - 1) / q : num / q;  // ceiling (C++ division truncates)
  ticks = start_ticks + static_cast<uint64_t>(static_cast<int64_t>(d));
  return ticks_to_ns(ticks, start_ticks, tick_q32, start_mono_ns) == ns;
}

// ---- Trailer ---------------------------------------------------------------
inline constexpr char kTrailerMagic[8] = {'S', 'T', 'R', 'A', 'T', 'F', 'T', '\n'};
struct Trailer {
  uint64_t footer_offset;  // file offset of the FOOTER block header
  char magic[8];           // kTrailerMagic
};
static_assert(sizeof(Trailer) == 16);

// ---- Categories (layers) written by the runtime ----------------------------
inline constexpr const char* kCatPosix = "POSIX";
inline constexpr const char* kCatStdio = "STDIO";
inline constexpr const char* kCatProcess = "PROC";

}  // namespace strata::format
