// analyze_shapes.c: the trace shapes of issue 9 §5 that stress `strata analyze`
// differently from the synthetic job of gen_trace, made by a real program
// under `strata run` (bench/analyze_shapes.sh).
//
//   analyze_shapes strided FILE N    N pread of 64 B at strided offsets of a 64 MiB file
//   analyze_shapes newoffset FILE N  N pread of 64 B, each at an offset not read before
//                                    (FILE at least N * 128 bytes; a sparse file will do)
//   analyze_shapes newfile DIR N     N stat of N distinct paths (every event a new file)
//   analyze_shapes dlfiles DIR N     a data loader over small files, ~N events: DIR gets
//                                    N / 30 files of 1 KiB (made once), which 3 epochs
//                                    of 2 forked workers each open, fstat, seek and read
//                                    as PIL does an image (10 calls a file), after the
//                                    main process has listed and stat()ed them
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kDirs = 100, kEpochs = 3, kWorkers = 2 };

static void file_path(char* p, size_t n, const char* dir, long i) {
  snprintf(p, n, "%s/c%02ld/img%07ld.bin", dir, i % kDirs, i);
}

// The data set: made once (a file's size says it is complete).
static int make_dataset(const char* dir, long files) {
  char p[4096];
  char data[1024];
  memset(data, 7, sizeof data);
  mkdir(dir, 0755);
  for (long d = 0; d < kDirs; ++d) {
    snprintf(p, sizeof p, "%s/c%02ld", dir, d);
    mkdir(p, 0755);
  }
  for (long i = 0; i < files; ++i) {
    file_path(p, sizeof p, dir, i);
    struct stat st;
    if (stat(p, &st) == 0 && st.st_size == (off_t)sizeof data) continue;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, sizeof data) != (ssize_t)sizeof data) {
      perror(p);
      return 1;
    }
    close(fd);
  }
  return 0;
}

// One sample, as PIL.Image.open + load reads a small image: 10 calls.
static unsigned long long read_sample(const char* p) {
  char buf[4096];
  int fd = open(p, O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  fstat(fd, &st);
  unsigned long long sum = (unsigned long long)lseek(fd, 0, SEEK_CUR);
  sum += (unsigned long long)read(fd, buf, 16);
  lseek(fd, 0, SEEK_SET);
  lseek(fd, 0, SEEK_CUR);
  sum += (unsigned long long)read(fd, buf, sizeof buf);
  lseek(fd, 0, SEEK_CUR);
  sum += (unsigned long long)read(fd, buf, sizeof buf);
  close(fd);
  return sum;
}

static int dlfiles(const char* dir, long n) {
  const long files = n / 30 > 0 ? n / 30 : 1;
  if (make_dataset(dir, files)) return 1;
  char p[4096];
  struct stat st;
  for (long i = 0; i < files; ++i) {  // the data set's index
    file_path(p, sizeof p, dir, i);
    stat(p, &st);
  }
  unsigned long long sum = 0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    pid_t pids[kWorkers];
    for (int w = 0; w < kWorkers; ++w) {
      pids[w] = fork();
      if (pids[w] == 0) {
        unsigned long long s = 0;
        for (long i = w; i < files; i += kWorkers) {
          file_path(p, sizeof p, dir, (i * 7919 + epoch) % files);  // shuffled per epoch
          s += read_sample(p);
        }
        _exit(s == 0);
      }
    }
    for (int w = 0; w < kWorkers; ++w) {
      int status = 0;
      waitpid(pids[w], &status, 0);
      sum += (unsigned long long)WEXITSTATUS(status);
    }
  }
  printf("dlfiles files=%ld failed_workers=%llu\n", files, sum);
  return sum != 0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s strided|newoffset|newfile|dlfiles PATH N\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  long n = atol(argv[3]);
  if (strcmp(mode, "dlfiles") == 0) return dlfiles(argv[2], n);
  char buf[64];
  unsigned long long sum = 0;
  if (strcmp(mode, "newfile") == 0) {
    char p[4096];
    struct stat st;
    for (long i = 0; i < n; ++i) {
      snprintf(p, sizeof p, "%s/d%ld/f%ld", argv[2], i % 1000, i);
      sum += (unsigned long long)stat(p, &st);
    }
  } else {
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
      perror(argv[2]);
      return 1;
    }
    const long blocks = (64L << 20) / 64;
    for (long i = 0; i < n; ++i) {
      // newoffset: every 128 bytes, never adjacent (FILE: >= N * 128 bytes, sparse is fine)
      long off = strcmp(mode, "strided") == 0 ? ((i * 7919) % blocks) * 64 : i * 128;
      ssize_t r = pread(fd, buf, sizeof buf, off);
      sum += (unsigned long long)r + (unsigned char)buf[0];
    }
    close(fd);
  }
  printf("%s n=%ld chk=%llu\n", mode, n, sum);
  return 0;
}
