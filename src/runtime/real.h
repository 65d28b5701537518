// Pointers to the next definition (libc's) of every function the runtime
// interposes. All of them are resolved with dlsym(RTLD_NEXT) by the
// library's constructor, before the program runs a line (resolve_all_real);
// an interposer called even earlier (another library's constructor) resolves
// its own on first use.
//
// Not later: dlsym is not async-signal-safe. A first call resolved lazily
// while a signal handler of the program longjmps out of it (a timeout around
// an open) left the dynamic linker's lock taken and its error catcher
// pointing into an abandoned frame: the next dlsym hung for ever, or its
// error path jumped into garbage (Edges.LongjmpsThatLandInsideStrataDoNotHang).
#pragma once

#include <dlfcn.h>

namespace strata::runtime {

void* resolve_next(const char* name);

// Resolves every pointer declared with STRATA_REAL_DECL in the library.
void resolve_all_real();

// One per STRATA_REAL_DECL, gathered by the linker in section strata_real.
using RealResolver = void (*)();

template <class F>
inline F real_fn(F& slot, const char* name) {
  F f = slot;
  if (__builtin_expect(f != nullptr, 1)) return f;
  f = reinterpret_cast<F>(resolve_next(name));
  slot = f;
  return f;
}

}  // namespace strata::runtime

// Declares the pointer to the real `fn` for this translation unit, and its
// entry in the strata_real section that resolve_all_real walks.
#define STRATA_REAL_DECL(fn) STRATA_REAL_DECL_T(fn, decltype(&::fn))
#define STRATA_REAL_DECL_T(fn, type)                                                       \
  static type real_##fn = nullptr;                                                         \
  static void resolve_real_##fn() { ::strata::runtime::real_fn(real_##fn, #fn); }          \
  __attribute__((used, section("strata_real"))) static ::strata::runtime::RealResolver \
      strata_real_entry_##fn = &resolve_real_##fn

// The real `fn` (resolved at start-up, or here on a call before it).
#define REAL(fn) ::strata::runtime::real_fn(real_##fn, #fn)
