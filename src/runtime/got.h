// GOT/PLT rewriting for tracing without LD_PRELOAD (strata_start): points the
// relocations of every loaded object for a function libstrata interposes at
// libstrata's interposer, and puts them back.
#pragma once

#include <cstddef>

namespace strata::runtime {

// True when libstrata can patch: it knows its own handle, and the functions
// its interposers call resolve outside libstrata (to libc).
bool got_usable();
// Patches every loaded object (and, through the dlopen/dlmopen hooks it
// installs, every object loaded later). Returns the number of entries changed.
size_t got_patch_all();
// Restores every entry got_patch_all changed in objects still loaded.
void got_restore_all();
// Entries currently pointing at libstrata.
size_t got_patched_count();

}  // namespace strata::runtime
