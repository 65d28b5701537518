// GOT/PLT rewriting: how strata_start traces a process that did not preload
// libstrata. Every call an object makes to a shared-library function goes
// through a slot of its global offset table (a JUMP_SLOT relocation for PLT
// calls, GLOB_DAT for calls and address-taking through the GOT). Writing the
// address of libstrata's interposer into the slot redirects the object's
// calls; the interposer reaches libc through dlsym(RTLD_NEXT), as under
// LD_PRELOAD. Each changed slot is remembered so strata_stop can put the old
// value back.
//
// Not patched: libstrata itself, the vdso, the dynamic loader, libc (libc
// calls its own functions directly, so LD_PRELOAD does not see those calls
// either). Objects dlmopen'ed into another link-map namespace have their own
// libc and are never seen: dl_iterate_phdr lists the caller's namespace only.
// Objects are patched once; dlopen/dlmopen are redirected to hooks that patch
// the objects a call loaded.
#include "runtime/got.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/real.h"

#if defined(__x86_64__)
#define STRATA_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define STRATA_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define STRATA_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define STRATA_R_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "GOT rewriting supports x86-64 and AArch64 (RELA relocations)"
#endif

namespace strata::runtime {
namespace {

struct Patch {
  void** slot;
  void* old_value;
  void* new_value;
  int protection;  // the page's protection when not writable (RELRO), else -1
};

// One loaded object, as dl_iterate_phdr reports it.
struct Object {
  uintptr_t base;
  const ElfW(Phdr)* phdr;
  int phnum;
  const char* name;
};

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
std::vector<Patch>* g_patches = nullptr;
// Objects already patched, by their dynamic section address (unique while
// the object is loaded): a dlopen patches only what it loaded.
std::vector<uintptr_t>* g_done = nullptr;
bool g_hooks_on = false;  // the dlopen hooks patch what they load
void* g_self_handle = nullptr;
uintptr_t g_self_base = 0;

using DlopenFn = void* (*)(const char*, int);
using DlmopenFn = void* (*)(Lmid_t, const char*, int);
DlopenFn g_real_dlopen = nullptr;
DlmopenFn g_real_dlmopen = nullptr;

void* hooked_dlopen(const char* file, int mode);
void* hooked_dlmopen(Lmid_t lmid, const char* file, int mode);

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

bool contains_address(const Object& o, uintptr_t addr) {
  for (int i = 0; i < o.phnum; ++i) {
    const ElfW(Phdr)& p = o.phdr[i];
    if (p.p_type == PT_LOAD && addr >= o.base + p.p_vaddr && addr < o.base + p.p_vaddr + p.p_memsz) return true;
  }
  return false;
}

bool is_skipped(const Object& o) {
  if (contains_address(o, reinterpret_cast<uintptr_t>(&got_patch_all))) return true;  // libstrata
  if (o.base == getauxval(AT_SYSINFO_EHDR)) return true;
  const char* name = base_name(o.name);
  return starts_with(name, "linux-vdso") || starts_with(name, "linux-gate") || starts_with(name, "ld-linux") ||
         starts_with(name, "ld64.so") || starts_with(name, "libc.so");
}

int collect(dl_phdr_info* info, size_t, void* out) {
  static_cast<std::vector<Object>*>(out)->push_back(
      Object{info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, info->dlpi_name ? info->dlpi_name : ""});
  return 0;
}

std::vector<Object> loaded_objects() {
  std::vector<Object> objects;
  dl_iterate_phdr(collect, &objects);
  return objects;
}

// libstrata's definition of `name` when it interposes it, else null.
void* lookup_replacement(const char* name) {
  if (std::strcmp(name, "dlopen") == 0) return reinterpret_cast<void*>(&hooked_dlopen);
  if (std::strcmp(name, "dlmopen") == 0) return reinterpret_cast<void*>(&hooked_dlmopen);
  // __libc_start_main wraps main under LD_PRELOAD; in a running process it
  // was called long ago.
  if (starts_with(name, "strata_") || std::strcmp(name, "__libc_start_main") == 0 || !g_self_handle) return nullptr;
  void* f = dlsym(g_self_handle, name);  // libstrata first, then its dependencies
  if (!f) return nullptr;
  Dl_info where;
  if (dladdr(f, &where) == 0 || reinterpret_cast<uintptr_t>(where.dli_fbase) != g_self_base) return nullptr;
  return f;
}

// lookup_replacement, remembered by name: most names (malloc, memcpy, ...)
// recur in every object, and dlsym + dladdr cost a hash lookup each.
std::unordered_map<std::string, void*>* g_replacements = nullptr;

void* replacement_for(const char* name) {
  if (!g_replacements) g_replacements = new std::unordered_map<std::string, void*>();
  auto it = g_replacements->find(name);
  if (it != g_replacements->end()) return it->second;
  void* f = lookup_replacement(name);
  g_replacements->emplace(name, f);
  return f;
}

// Dynamic-section pointers are relocated in place by the loader for most
// objects; an unrelocated one is an offset from the load base.
uintptr_t dyn_address(uintptr_t base, ElfW(Addr) p) { return p < base ? base + p : p; }

// Protection of the page holding `at` when it is not writable: the RELRO
// range is read-only once relocated; a GOT in a segment without PF_W (never
// produced by the usual linkers) keeps its segment's flags. -1: writable.
int protection_of(const Object& o, uintptr_t at, uintptr_t relro_begin, uintptr_t relro_end) {
  if (at >= relro_begin && at < relro_end) return PROT_READ;
  for (int i = 0; i < o.phnum; ++i) {
    const ElfW(Phdr)& p = o.phdr[i];
    if (p.p_type != PT_LOAD || at < o.base + p.p_vaddr || at >= o.base + p.p_vaddr + p.p_memsz) continue;
    if (p.p_flags & PF_W) return -1;
    return PROT_READ | ((p.p_flags & PF_X) ? PROT_EXEC : 0);
  }
  return -1;
}

void write_slot(void** slot, void* value, int protection) {
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(slot) & ~(page_size - 1));
  const bool read_only = protection >= 0;
  if (read_only && mprotect(page, page_size, protection | PROT_WRITE) != 0) return;
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (read_only) mprotect(page, page_size, protection);
}

struct Relocations {
  const ElfW(Rela)* rela = nullptr;
  size_t rela_bytes = 0;
  const ElfW(Rela)* jmprel = nullptr;
  size_t jmprel_bytes = 0;
  bool jmprel_is_rela = true;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
};

bool read_dynamic(const Object& o, Relocations& r, uintptr_t& dyn_addr, uintptr_t& relro_begin,
                  uintptr_t& relro_end) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < o.phnum; ++i) {
    const ElfW(Phdr)& p = o.phdr[i];
    if (p.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(o.base + p.p_vaddr);
    if (p.p_type == PT_GNU_RELRO) {
      const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
      relro_begin = (o.base + p.p_vaddr) & ~(page_size - 1);
      relro_end = (o.base + p.p_vaddr + p.p_memsz) & ~(page_size - 1);  // the loader rounds down
    }
  }
  if (!dyn) return false;
  dyn_addr = reinterpret_cast<uintptr_t>(dyn);
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_RELA: r.rela = reinterpret_cast<const ElfW(Rela)*>(dyn_address(o.base, dyn->d_un.d_ptr)); break;
      case DT_RELASZ: r.rela_bytes = dyn->d_un.d_val; break;
      case DT_JMPREL: r.jmprel = reinterpret_cast<const ElfW(Rela)*>(dyn_address(o.base, dyn->d_un.d_ptr)); break;
      case DT_PLTRELSZ: r.jmprel_bytes = dyn->d_un.d_val; break;
      case DT_PLTREL: r.jmprel_is_rela = dyn->d_un.d_val == DT_RELA; break;
      case DT_SYMTAB: r.symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_address(o.base, dyn->d_un.d_ptr)); break;
      case DT_STRTAB: r.strtab = reinterpret_cast<const char*>(dyn_address(o.base, dyn->d_un.d_ptr)); break;
      default: break;
    }
  }
  return r.symtab && r.strtab;
}

size_t patch_table(const Object& o, const Relocations& r, const ElfW(Rela)* table, size_t bytes,
                   uintptr_t relro_begin, uintptr_t relro_end) {
  size_t changed = 0;
  for (size_t i = 0; table && i < bytes / sizeof(ElfW(Rela)); ++i) {
    const ElfW(Rela)& rel = table[i];
    const auto type = ELF64_R_TYPE(rel.r_info);
    if (type != STRATA_R_JUMP_SLOT && type != STRATA_R_GLOB_DAT) continue;
    const ElfW(Sym)& sym = r.symtab[ELF64_R_SYM(rel.r_info)];
    if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;  // defined here: not a libc call
    void* target = replacement_for(r.strtab + sym.st_name);
    if (!target) continue;
    auto** slot = reinterpret_cast<void**>(o.base + rel.r_offset);
    void* current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (current == target) continue;
    const uintptr_t at = reinterpret_cast<uintptr_t>(slot);
    const int protection = protection_of(o, at, relro_begin, relro_end);
    g_patches->push_back(Patch{slot, current, target, protection});
    write_slot(slot, target, protection);
    ++changed;
  }
  return changed;
}

size_t patch_object(const Object& o) {
  Relocations r;
  uintptr_t dyn_addr = 0, relro_begin = 0, relro_end = 0;
  if (!read_dynamic(o, r, dyn_addr, relro_begin, relro_end)) return 0;
  for (uintptr_t done : *g_done)
    if (done == dyn_addr) return 0;
  g_done->push_back(dyn_addr);
  size_t changed = patch_table(o, r, r.rela, r.rela_bytes, relro_begin, relro_end);
  if (r.jmprel_is_rela) changed += patch_table(o, r, r.jmprel, r.jmprel_bytes, relro_begin, relro_end);
  return changed;
}

// The interposers call the next definition (real.h). Loaded by dlopen, the
// next one in libstrata's scope must still be libc's, never libstrata's own:
// an interposer calling itself would recurse until the stack overflows.
bool real_functions_outside_self() {
  for (const char* name : {"read", "write", "open", "fopen", "fork", "dlopen"}) {
    void* f = resolve_next(name);
    Dl_info where;
    if (!f || dladdr(f, &where) == 0 || reinterpret_cast<uintptr_t>(where.dli_fbase) == g_self_base) return false;
  }
  return true;
}

// Once: libstrata's own handle and base, and libc's dlopen/dlmopen.
bool find_self() {
  static int usable = -1;
  if (usable >= 0) return usable == 1;
  usable = 0;
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&got_patch_all), &self) == 0 || !self.dli_fname) return false;
  g_self_base = reinterpret_cast<uintptr_t>(self.dli_fbase);
  g_self_handle = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  g_real_dlopen = reinterpret_cast<DlopenFn>(resolve_next("dlopen"));
  g_real_dlmopen = reinterpret_cast<DlmopenFn>(resolve_next("dlmopen"));
  usable = g_self_handle != nullptr && g_real_dlopen != nullptr && real_functions_outside_self() ? 1 : 0;
  return usable == 1;
}

// Patches objects not patched yet; forgets unloaded ones (their dynamic
// section address may come back with another object).
size_t patch_new_objects() {
  std::vector<Object> objects = loaded_objects();
  std::vector<uintptr_t> still_loaded;
  for (uintptr_t done : *g_done) {
    for (const Object& o : objects) {
      if (contains_address(o, done)) {
        still_loaded.push_back(done);
        break;
      }
    }
  }
  *g_done = std::move(still_loaded);
  size_t changed = 0;
  for (const Object& o : objects)
    if (!is_skipped(o)) changed += patch_object(o);
  return changed;
}

void patch_after_load(void* handle) {
  if (!handle) return;
  pthread_mutex_lock(&g_mu);
  if (g_hooks_on) patch_new_objects();
  pthread_mutex_unlock(&g_mu);
}

void* hooked_dlopen(const char* file, int mode) {
  void* handle = g_real_dlopen(file, mode);
  int saved = errno;
  patch_after_load(handle);
  errno = saved;
  return handle;
}

void* hooked_dlmopen(Lmid_t lmid, const char* file, int mode) {
  void* handle = g_real_dlmopen ? g_real_dlmopen(lmid, file, mode) : nullptr;
  int saved = errno;
  patch_after_load(handle);
  errno = saved;
  return handle;
}

}  // namespace

bool got_usable() {
  pthread_mutex_lock(&g_mu);
  bool ok = find_self();
  pthread_mutex_unlock(&g_mu);
  return ok;
}

size_t got_patch_all() {
  pthread_mutex_lock(&g_mu);
  size_t changed = 0;
  if (find_self()) {
    if (!g_patches) g_patches = new std::vector<Patch>();
    if (!g_done) g_done = new std::vector<uintptr_t>();
    g_hooks_on = true;
    changed = patch_new_objects();
  }
  pthread_mutex_unlock(&g_mu);
  return changed;
}

void got_restore_all() {
  pthread_mutex_lock(&g_mu);
  g_hooks_on = false;
  if (g_patches) {
    std::vector<Object> objects = loaded_objects();
    // Newest first: a slot patched twice (unloaded, reloaded) ends as it began.
    for (auto it = g_patches->rbegin(); it != g_patches->rend(); ++it) {
      const uintptr_t at = reinterpret_cast<uintptr_t>(it->slot);
      bool mapped = false;
      for (const Object& o : objects) mapped = mapped || contains_address(o, at);
      if (mapped && __atomic_load_n(it->slot, __ATOMIC_ACQUIRE) == it->new_value)
        write_slot(it->slot, it->old_value, it->protection);
    }
    g_patches->clear();
  }
  if (g_done) g_done->clear();
  pthread_mutex_unlock(&g_mu);
}

size_t got_patched_count() {
  pthread_mutex_lock(&g_mu);
  size_t n = g_patches ? g_patches->size() : 0;
  pthread_mutex_unlock(&g_mu);
  return n;
}

}  // namespace strata::runtime
