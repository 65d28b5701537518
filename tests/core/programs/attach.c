/* Test program of tracing without the launcher (tests/core/attach_test.cc).
 *
 *   core_attach plain  WORKDIR             the workload only (run under `strata run`)
 *   core_attach attach WORKDIR TRACE       before.txt, strata_start, workload, strata_stop, after.txt
 *   core_attach twice  WORKDIR TRACE1 TRACE2   two start/stop sessions, workload in each
 *   core_attach errors WORKDIR TRACE       return values of misuse
 *   core_attach got    WORKDIR TRACE       &read before, during and after attach
 *   core_attach sigterm WORKDIR TRACE      killed by SIGTERM while attached
 *   core_attach dlmopen WORKDIR TRACE LIB  LIB loaded after start, in two namespaces
 *
 * Built twice: linked with -lstrata (core_attach_linked), and loading
 * libstrata with dlopen from $STRATA_LIB (core_attach_dlopen, -DATTACH_DLOPEN),
 * where the executable's calls reach strata only through GOT rewriting. Prints
 * what it did on stdout: the output must be the same traced or not.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef ATTACH_DLOPEN
static int (*strata_start)(const char*);
static int (*strata_stop)(void);
static void load_strata(void) {
  const char* lib = getenv("STRATA_LIB");
  void* h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    fprintf(stderr, "core_attach: cannot load $STRATA_LIB: %s\n", dlerror());
    exit(2);
  }
  *(void**)&strata_start = dlsym(h, "strata_start");
  *(void**)&strata_stop = dlsym(h, "strata_stop");
}
#else
#include "strata/strata.h"
static void load_strata(void) {}
#endif

/* The address of read as this executable sees it, read from its GOT each
 * time (the call is not inlined, the pointer is volatile). */
__attribute__((noinline)) static void* read_address(void) {
  ssize_t (*volatile f)(int, void*, size_t) = read;
  return (void*)f;
}

static int sigterm_is_default(void) {
  struct sigaction old;
  return sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL;
}

static void path_in(char* out, const char* dir, const char* name) { snprintf(out, 4096, "%s/%s", dir, name); }

static void write_file(const char* dir, const char* name, size_t n) {
  char p[4096], buf[1000];
  path_in(p, dir, name);
  memset(buf, 'a', sizeof(buf));
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  while (n > 0) {
    size_t k = n < sizeof(buf) ? n : sizeof(buf);
    if (write(fd, buf, k) != (ssize_t)k) exit(3);
    n -= k;
  }
  close(fd);
}

/* 2 opens, 3 writes of 1000, 1 pwrite of 100, 1 lseek, 3 reads, 2 closes,
 * fopen/fwrite/fclose and fopen/fread/fclose, 1 stat, 1 rename, 1 unlink,
 * and a forked child that writes child.txt (1 open, 2 writes, 1 close). */
static void workload(const char* dir) {
  char p[4096], q[4096], buf[4096];
  memset(buf, 'b', sizeof(buf));
  write_file(dir, "data.bin", 3000);
  path_in(p, dir, "data.bin");
  int fd = open(p, O_RDWR);
  if (pwrite(fd, buf, 100, 3000) != 100) exit(3);
  lseek(fd, 0, SEEK_SET);
  long got = 0, r;
  while ((r = read(fd, buf, 2000)) > 0) got += r;
  close(fd);
  path_in(p, dir, "stream.txt");
  FILE* f = fopen(p, "w");
  fwrite("hello stream\n", 1, 13, f);
  fclose(f);
  f = fopen(p, "r");
  size_t sr = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  struct stat st;
  stat(p, &st);
  path_in(q, dir, "renamed.txt");
  rename(p, q);
  unlink(q);
  pid_t child = fork();
  if (child == 0) {
    write_file(dir, "child.txt", 1500);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("workload: read %ld bytes, stream %zu bytes, size %lld, child %d\n", got, sr, (long long)st.st_size,
         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: core_attach plain|attach|twice|errors WORKDIR [TRACE [TRACE2]]\n");
    return 2;
  }
  const char* mode = argv[1];
  const char* dir = argv[2];
  setvbuf(stdout, NULL, _IONBF, 0);
  if (strcmp(mode, "plain") == 0) {
    workload(dir);
    return 0;
  }
  load_strata();
  if (strcmp(mode, "attach") == 0 && argc == 4) {
    write_file(dir, "before.txt", 10);
    int rc = strata_start(argv[3]);
    printf("start %d\n", rc);
    /* What exec'd children get while tracing, and that stop takes it back. */
    const char* pre = getenv("LD_PRELOAD");
    fprintf(stderr, "during: STRATA_DIR %s, LD_PRELOAD %s\n", getenv("STRATA_DIR") ? "set" : "unset",
            pre && strstr(pre, "libstrata.so") ? "has libstrata" : "lacks libstrata");
    workload(dir);
    printf("stop %d\n", strata_stop());
    fprintf(stderr, "after: STRATA_DIR %s, LD_PRELOAD %s\n", getenv("STRATA_DIR") ? "set" : "unset",
            getenv("LD_PRELOAD") ? "set" : "unset");
    write_file(dir, "after.txt", 20);
    return 0;
  }
  if (strcmp(mode, "twice") == 0 && argc == 5) {
    char sub[4096];
    for (int i = 0; i < 2; ++i) {
      path_in(sub, dir, i == 0 ? "one" : "two");
      mkdir(sub, 0755);
      printf("start %d\n", strata_start(argv[3 + i]));
      workload(sub);
      printf("stop %d\n", strata_stop());
    }
    return 0;
  }
  if (strcmp(mode, "got") == 0 && argc == 4) {
    /* &read is loaded from the executable's GOT (a GLOB_DAT slot): strata's
     * interposer while attached, libc's again after strata_stop. */
    void* before = read_address();
    int term_before = sigterm_is_default();
    strata_start(argv[3]);
    void* during = read_address();
    int term_during = sigterm_is_default();
    strata_stop();
    void* after = read_address();
    int term_after = sigterm_is_default();
    Dl_info info;
    printf("during %s, after %s\n", during != before ? "changed" : "same", after == before ? "restored" : "different");
    /* strata's flush handler sits in the kernel while attached; the program
     * sees SIG_DFL throughout, and after stop the kernel has SIG_DFL again. */
    printf("SIGTERM default: %d %d %d\n", term_before, term_during, term_after);
    printf("during in %s\n", dladdr(during, &info) && strstr(info.dli_fname, "libstrata") ? "libstrata" : "other");
    return 0;
  }
  if (strcmp(mode, "dlmopen") == 0 && argc == 5) {
    /* The same library loaded after start into the base namespace (traced)
     * and into a new one (left alone: it has its own libc). */
    strata_start(argv[3]);
    char p[4096];
    for (int i = 0; i < 2; ++i) {
      void* h = dlmopen(i == 0 ? LM_ID_BASE : LM_ID_NEWLM, argv[4], RTLD_NOW | RTLD_LOCAL);
      long (*io_write)(const char*, int) = NULL;
      if (h) *(void**)&io_write = dlsym(h, "ctypes_io_write");
      path_in(p, dir, i == 0 ? "base.bin" : "newlm.bin");
      printf("%s wrote %ld\n", i == 0 ? "base" : "newlm", io_write ? io_write(p, 3) : -1L);
    }
    strata_stop();
    return 0;
  }
  if (strcmp(mode, "sigterm") == 0 && argc == 4) {
    /* Killed while attached: the trace is finished as under strata run. */
    strata_start(argv[3]);
    write_file(dir, "last.txt", 1234);
    raise(SIGTERM);
    return 0;
  }
  if (strcmp(mode, "errors") == 0 && argc == 4) {
    errno = 0;
    int r = strata_stop();
    printf("stop before start %d errno %s\n", r, r ? strerror(errno) : "-");
    r = strata_start("");
    printf("start empty %d errno %s\n", r, r ? strerror(errno) : "-");
    printf("start %d\n", strata_start(argv[3]));
    errno = 0;
    r = strata_start(argv[3]);
    printf("start again %d errno %s\n", r, r ? strerror(errno) : "-");
    printf("stop %d\n", strata_stop());
    r = strata_stop();
    printf("stop again %d errno %s\n", r, r ? strerror(errno) : "-");
    return 0;
  }
  fprintf(stderr, "core_attach: bad arguments\n");
  return 2;
}
