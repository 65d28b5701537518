// Pointers to the next definition (libc's) of every function the runtime
// interposes, resolved with dlsym(RTLD_NEXT) on first use so interposers work
// even when called before the runtime's constructor.
#pragma once

#include <dlfcn.h>

namespace strata::runtime {

void* resolve_next(const char* name);

}  // namespace strata::runtime

// Declares the pointer to the real `fn` for this translation unit.
#define STRATA_REAL_DECL(fn) static decltype(&::fn) real_##fn = nullptr
#define STRATA_REAL_DECL_T(fn, type) static type real_##fn = nullptr
namespace strata::runtime {
template <class F>
inline F real_fn(F& slot, const char* name) {
  F f = slot;
  if (__builtin_expect(f != nullptr, 1)) return f;
  f = reinterpret_cast<F>(resolve_next(name));
  slot = f;
  return f;
}
}  // namespace strata::runtime

// The real `fn`, resolved on first use.
#define REAL(fn) ::strata::runtime::real_fn(real_##fn, #fn)
