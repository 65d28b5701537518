// strata application API (C++), header-only on top of strata.h.
//
//   strata::Region r("load_batch", "app");      // RAII region
//   strata::TagScope t("epoch", 3);             // tags in force until scope exit
//   STRATA_REGION("preprocess");                // region named by a literal
#pragma once

#include <cstdint>
#include <string>

#include "strata/strata.h"

namespace strata {

class Region {
 public:
  explicit Region(const char* name, const char* category = "app") {
    strata_region_begin(name, category);
  }
  ~Region() { strata_region_end(); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};

// Sets tags for the lifetime of the scope, restoring the previous set after.
class TagScope {
 public:
  TagScope(const char* key, int64_t value) : saved_(strata_tag_save()) {
    strata_tag_set_int(key, value);
  }
  TagScope(const char* key, const char* value) : saved_(strata_tag_save()) {
    strata_tag_set_str(key, value);
  }
  TagScope(const char* key, const std::string& value) : TagScope(key, value.c_str()) {}
  ~TagScope() { strata_tag_restore(saved_); }
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;

 private:
  uint32_t saved_;
};

inline void instant(const char* name, const char* category = "app") {
  strata_instant(name, category);
}
inline void counter(const char* name, int64_t value) { strata_counter(name, value); }
inline void tag(const char* key, int64_t value) { strata_tag_set_int(key, value); }
inline void tag(const char* key, const char* value) { strata_tag_set_str(key, value); }
inline bool enabled() { return strata_enabled() != 0; }

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)
#define STRATA_REGION(name) ::strata::Region STRATA_CONCAT(strata_region_, __LINE__)(name)
