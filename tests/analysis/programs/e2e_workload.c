/* Known workloads for the end-to-end tests of `strata analyze`
 * (tests/analysis/e2e_test.cc derives every expected number from the calls
 * below; change one and the test's arithmetic must change with it).
 *
 * Input files are created by the test BEFORE the traced run, so the trace
 * holds only these calls. Links libstrata.so for the C API (tags, regions);
 * `strata run` preloads the same library.
 *
 *   seq FILE N            open, N x read(4096), close
 *   rand FILE             open, 9 preads at fixed offsets/sizes, close
 *   mixed FILE            writes, seeks, a read, fstat/stat, fsync/fdatasync
 *   stdio FILE            fopen/fwrite/fflush/fclose, fopen/fread/fseek/fread/fclose
 *   shared FILE P whole   P forked children each read all of FILE (4 KiB reads)
 *   shared FILE P part    child i preads the i-th 1/P of FILE (4 KiB preads)
 *   fpp DIR P             child i reads DIR/shard_<i>.dat whole (4 KiB reads)
 *   epochs DIR E          config read, E epochs tagged epoch=e (train, val, state, log), ckpt in the last
 *   dl DIR E              a DataLoader-like job (see dl() below): epoch tags, dataloader.next
 *                         regions, 2 forked workers per epoch, checkpoint regions
 *   overlap FIFO          compute region [0,300] ms on one thread; reads of a
 *                         FIFO (created) on another, blocking [~0,200] [200,500]
 *                         [500,600] ms until the main thread writes a byte
 *   all DIR               seq(32) + rand + mixed + stdio + shared part (4) on DIR/...
 *   align FILE            6 writes then 6 reads (every read/write form), 6 of them
 *                         with a buffer not aligned to 8 bytes (see align_io())
 *   seeks FILE            fwrite after fseek SEEK_SET/SEEK_CUR/SEEK_END, rewind, fsetpos
 *   failed FILE           open(O_WRONLY) and stat of FILE before it exists (both fail),
 *                         then open(O_CREAT), a 100-byte write, close, stat
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "strata/strata.h"

static char buf[1 << 16] __attribute__((aligned(4096)));

static void die(const char* what) {
  fprintf(stderr, "e2e_workload: %s: %s\n", what, strerror(errno));
  exit(3);
}

static int xopen(const char* path, int flags) {
  int fd = open(path, flags, 0644);
  if (fd < 0) die(path);
  return fd;
}

static void xread(int fd, size_t n) {
  if (read(fd, buf, n) != (ssize_t)n) die("read");
}

static void xpread(int fd, size_t n, off_t off) {
  if (pread(fd, buf, n, off) != (ssize_t)n) die("pread");
}

static void xwrite(int fd, size_t n) {
  if (write(fd, buf, n) != (ssize_t)n) die("write");
}

/* N sequential 4 KiB reads of a file of exactly N * 4096 bytes (no EOF read). */
static void seq(const char* path, int n) {
  int fd = xopen(path, O_RDONLY);
  for (int i = 0; i < n; ++i) xread(fd, 4096);
  close(fd);
}

/* The 9 preads (offset, size) of the test's table; file >= 45056 bytes. */
static const struct {
  off_t off;
  size_t size;
} kRand[] = {{0, 4096},     {8192, 4096},  {20480, 4096}, {4096, 8192}, {12288, 8192},
             {32768, 4096}, {40960, 4096}, {1000, 100},   {1100, 100}};

static void rnd(const char* path) {
  int fd = xopen(path, O_RDONLY);
  for (size_t i = 0; i + 1 < sizeof kRand / sizeof kRand[0]; ++i) xpread(fd, kRand[i].size, kRand[i].off);
  /* The last one into a buffer at an odd address (Darshan: MEM_NOT_ALIGNED). */
  if (pread(fd, buf + 1, 100, 1100) != 100) die("pread");
  close(fd);
}

static void mixed(const char* path) {
  struct stat st;
  int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
  xwrite(fd, 4096);                                       /* w1 @0 */
  xwrite(fd, 4096);                                       /* w2 @4096 */
  if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");          /* seek 1 */
  xread(fd, 4096);                                        /* r1 @0 */
  if (lseek(fd, 4096, SEEK_SET) != 4096) die("lseek");    /* seek 2 */
  xwrite(fd, 4096);                                       /* w3 @4096 */
  if (fstat(fd, &st) != 0) die("fstat");                  /* stat 1 */
  if (stat(path, &st) != 0) die("stat");                  /* stat 2 */
  if (fsync(fd) != 0) die("fsync");
  if (fdatasync(fd) != 0) die("fdatasync");
  close(fd);
}

/* As cp does: an open that fails (ENOENT) before the one that creates. */
static void failed_first(const char* path) {
  struct stat st;
  if (open(path, O_WRONLY) >= 0 || stat(path, &st) == 0) die("exists already");
  int fd = xopen(path, O_WRONLY | O_CREAT);
  if (write(fd, buf, 100) != 100) die("write");
  close(fd);
  if (stat(path, &st) != 0) die("stat");
}

static void stdio_io(const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) die(path);
  for (int i = 0; i < 3; ++i)
    if (fwrite(buf, 1, 1000, f) != 1000) die("fwrite");
  if (fflush(f) != 0) die("fflush");
  fclose(f);
  f = fopen(path, "r");
  if (!f) die(path);
  for (int i = 0; i < 3; ++i)
    if (fread(buf, 1, 1000, f) != 1000) die("fread");
  if (fseek(f, 0, SEEK_SET) != 0) die("fseek");
  if (fread(buf, 100, 5, f) != 5) die("fread");
  fclose(f);
}

static void check(ssize_t got, ssize_t want, const char* what) {
  if (got != want) die(what);
}

/* Darshan counts a call in POSIX_MEM_NOT_ALIGNED when its buffer (every
 * iovec's, for the vector forms) is not a multiple of 8 bytes (buf is 4096
 * aligned). Not aligned: write +1, pwrite +4, writev (+3), read +2, pread +5,
 * readv (+1): 6 of the 12 calls. Aligned: +0, +8, +16/+32, +64. */
static void align_io(const char* path) {
  int fd = xopen(path, O_RDWR | O_CREAT | O_TRUNC);
  check(write(fd, buf, 100), 100, "write");
  check(write(fd, buf + 1, 100), 100, "write");
  check(pwrite(fd, buf + 4, 100, 200), 100, "pwrite");
  check(pwrite(fd, buf + 8, 100, 300), 100, "pwrite");
  struct iovec wv[2] = {{buf, 10}, {buf + 3, 10}};
  check(writev(fd, wv, 2), 20, "writev");
  struct iovec pwv[2] = {{buf + 16, 10}, {buf + 32, 10}};
  check(pwritev(fd, pwv, 2, 400), 20, "pwritev");
  if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");
  check(read(fd, buf + 2, 50), 50, "read");
  check(read(fd, buf, 50), 50, "read");
  check(pread(fd, buf + 5, 50, 0), 50, "pread");
  check(pread(fd, buf + 64, 50, 0), 50, "pread");
  struct iovec rv[2] = {{buf + 1, 10}, {buf, 10}};
  check(readv(fd, rv, 2), 20, "readv");
  struct iovec prv[1] = {{buf + 8, 10}};
  check(preadv(fd, prv, 1, 0), 10, "preadv");
  close(fd);
}

/* Writes after every kind of stream position change; Darshan's offset after
 * each is ftell's: 10 at 0, 10 at 100 (SET), 5 at 160 (CUR +50), 10 at 161
 * (END -4 of 165), 1 at 0 (rewind), 9 at 171 (fsetpos): STDIO_MAX_BYTE_WRITTEN
 * 179, 45 bytes, 6 writes, 5 seeks. */
static void seeks_io(const char* path) {
  FILE* f = fopen(path, "w+");
  if (!f) die(path);
  fpos_t saved;
  if (fwrite(buf, 1, 10, f) != 10) die("fwrite");
  if (fseek(f, 100, SEEK_SET) != 0) die("fseek");
  if (fwrite(buf, 1, 10, f) != 10) die("fwrite");
  if (fseek(f, 50, SEEK_CUR) != 0) die("fseek");
  if (fwrite(buf, 1, 5, f) != 5) die("fwrite");
  if (fseek(f, -4, SEEK_END) != 0) die("fseek");
  if (fwrite(buf, 1, 10, f) != 10) die("fwrite");
  if (fgetpos(f, &saved) != 0) die("fgetpos");
  rewind(f);
  if (fwrite(buf, 1, 1, f) != 1) die("fwrite");
  if (fsetpos(f, &saved) != 0) die("fsetpos");
  if (fwrite(buf, 1, 9, f) != 9) die("fwrite");
  fclose(f);
}

static void wait_all(int n, const pid_t* kids) {
  for (int i = 0; i < n; ++i) {
    int st = 0;
    if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "e2e_workload: child %d failed\n", (int)kids[i]);
      exit(4);
    }
  }
}

static void shared(const char* path, int p, int whole) {
  struct stat st;
  if (stat(path, &st) != 0) die(path);
  const off_t size = st.st_size;
  pid_t kids[64];
  fflush(NULL);
  for (int i = 0; i < p; ++i) {
    pid_t k = fork();
    if (k < 0) die("fork");
    if (k == 0) {
      int fd = xopen(path, O_RDONLY);
      if (whole) {
        for (off_t o = 0; o < size; o += 4096) xread(fd, 4096);
      } else {
        const off_t part = size / p;
        for (off_t o = 0; o < part; o += 4096) xpread(fd, 4096, i * part + o);
      }
      close(fd);
      exit(0);
    }
    kids[i] = k;
  }
  wait_all(p, kids);
}

static void fpp(const char* dir, int p) {
  pid_t kids[64];
  fflush(NULL);
  for (int i = 0; i < p; ++i) {
    pid_t k = fork();
    if (k < 0) die("fork");
    if (k == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s/shard_%d.dat", dir, i);
      struct stat st;
      if (stat(path, &st) != 0) die(path); /* counts in POSIX_STATS of the shard */
      int fd = xopen(path, O_RDONLY);
      for (off_t o = 0; o < st.st_size; o += 4096) xread(fd, 4096);
      close(fd);
      exit(0);
    }
    kids[i] = k;
  }
  wait_all(p, kids);
}

/* config.json: 100 bytes read once, untagged. Then per epoch e (tag epoch=e):
 *   train.bin 65536 B: 16 reads of 4096;  val.bin 16384 B: 4 reads of 4096;
 *   state.dat: open(O_TRUNC), 3 writes of 8192, fsync, close;
 *   train.log (opened once before the epochs, O_APPEND): one 16-byte write;
 *   last epoch only: model.ckpt: open(O_TRUNC), 2 writes of 4096, close. */
static void epochs(const char* dir, int ne) {
  char p[4096];
  snprintf(p, sizeof p, "%s/config.json", dir);
  int fd = xopen(p, O_RDONLY);
  xread(fd, 100);
  close(fd);
  snprintf(p, sizeof p, "%s/train.log", dir);
  int log = xopen(p, O_WRONLY | O_CREAT | O_APPEND);
  for (int e = 0; e < ne; ++e) {
    strata_tag_set_int("epoch", e);
    snprintf(p, sizeof p, "%s/train.bin", dir);
    seq(p, 16);
    snprintf(p, sizeof p, "%s/val.bin", dir);
    seq(p, 4);
    snprintf(p, sizeof p, "%s/state.dat", dir);
    fd = xopen(p, O_WRONLY | O_CREAT | O_TRUNC);
    for (int i = 0; i < 3; ++i) xwrite(fd, 8192);
    if (fsync(fd) != 0) die("fsync");
    close(fd);
    memcpy(buf, "epoch done ....\n", 16);
    xwrite(log, 16);
    if (e == ne - 1) {
      snprintf(p, sizeof p, "%s/model.ckpt", dir);
      fd = xopen(p, O_WRONLY | O_CREAT | O_TRUNC);
      xwrite(fd, 4096);
      xwrite(fd, 4096);
      close(fd);
    }
  }
  strata_tag_unset("epoch");
  close(log);
}

/* What strata's Python layer records for a PyTorch training, by hand.
 * Files (created by the test): DIR/once/o_<k>.dat (k < 4, 4096 B),
 * DIR/data/train/c<w>/s_<i>.png (w < 2, i < 3, 2048 B), DIR/data/val/v_<i>.png
 * (i < 4, 1024 B). Untagged: each once/ file read once (one read of 4096).
 * Per epoch e (tag epoch=e):
 *   batch 1: region dataloader.next (cat dataloader) around forking 2 workers
 *            (tags epoch=e, worker=w) and waiting for them; worker w reads each
 *            train/c<w>/ file whole (open, one read of 2048, close);
 *   region forward (cat compute), empty; batches 2, 3: empty dataloader.next;
 *   validation: 4 dataloader.next regions, the i-th around reading val/v_<i>.png
 *            whole (open, one read of 1024, close) in the main process;
 *   region torch.save (cat checkpoint) around open(O_TRUNC) of
 *            DIR/data/ckpt/model.pt, one write of 4096, close.
 * So per epoch: 7 dataloader.next, 10 reads (16384 B), 1 write (4096 B). */
static void read_whole(const char* path, size_t n) {
  int fd = xopen(path, O_RDONLY);
  xread(fd, n);
  close(fd);
}

static void dl(const char* dir, int ne) {
  char p[4096];
  for (int k = 0; k < 4; ++k) {
    snprintf(p, sizeof p, "%s/once/o_%d.dat", dir, k);
    read_whole(p, 4096);
  }
  for (int e = 0; e < ne; ++e) {
    strata_tag_set_int("epoch", e);
    strata_region_begin("dataloader.next", "dataloader");
    pid_t kids[2];
    fflush(NULL);
    for (int w = 0; w < 2; ++w) {
      pid_t k = fork();
      if (k < 0) die("fork");
      if (k == 0) {
        strata_tag_set_int("epoch", e);
        strata_tag_set_int("worker", w);
        for (int i = 0; i < 3; ++i) {
          snprintf(p, sizeof p, "%s/data/train/c%d/s_%d.png", dir, w, i);
          read_whole(p, 2048);
        }
        exit(0);
      }
      kids[w] = k;
    }
    wait_all(2, kids);
    strata_region_end();
    strata_region_begin("forward", "compute");
    strata_region_end();
    for (int b = 0; b < 2; ++b) {
      strata_region_begin("dataloader.next", "dataloader");
      strata_region_end();
    }
    for (int i = 0; i < 4; ++i) {
      strata_region_begin("dataloader.next", "dataloader");
      snprintf(p, sizeof p, "%s/data/val/v_%d.png", dir, i);
      read_whole(p, 1024);
      strata_region_end();
    }
    strata_region_begin("torch.save", "checkpoint");
    snprintf(p, sizeof p, "%s/data/ckpt/model.pt", dir);
    int fd = xopen(p, O_WRONLY | O_CREAT | O_TRUNC);
    xwrite(fd, 4096);
    close(fd);
    strata_region_end();
  }
  strata_tag_unset("epoch");
}

/* ---- overlap ---------------------------------------------------------------- */
static uint64_t t0;
static int pfd[2];
static uint64_t c_beg, c_end, r_beg[3], r_end[3];

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static void* compute_thread(void* a) {
  (void)a;
  c_beg = mono();
  strata_region_begin("compute_step", "compute");
  sleep_until(t0 + 300000000ull);
  strata_region_end();
  c_end = mono();
  return NULL;
}

static void* reader_thread(void* a) {
  (void)a;
  char c;
  for (int i = 0; i < 3; ++i) {
    r_beg[i] = mono();
    if (read(pfd[0], &c, 1) != 1) die("pipe read");
    r_end[i] = mono();
  }
  return NULL;
}

static void overlap(const char* fifo) {
  /* A FIFO (not pipe(2)): reads need a path to be traced. O_RDWR on a FIFO
   * does not block on Linux; one descriptor serves both ends. */
  if (mkfifo(fifo, 0600) != 0) die(fifo);
  pfd[0] = pfd[1] = xopen(fifo, O_RDWR);
  t0 = mono();
  pthread_t c, r;
  pthread_create(&c, NULL, compute_thread, NULL);
  pthread_create(&r, NULL, reader_thread, NULL);
  const uint64_t at[3] = {200, 500, 600};
  for (int i = 0; i < 3; ++i) {
    sleep_until(t0 + at[i] * 1000000ull);
    if (write(pfd[1], "x", 1) != 1) die("pipe write");
  }
  pthread_join(c, NULL);
  pthread_join(r, NULL);
  /* Self-measured intervals (CLOCK_MONOTONIC ns), slightly wider than the
   * traced calls: the test derives its own expectation from them. */
  printf("compute %llu %llu\n", (unsigned long long)c_beg, (unsigned long long)c_end);
  for (int i = 0; i < 3; ++i) printf("read %llu %llu\n", (unsigned long long)r_beg[i], (unsigned long long)r_end[i]);
  close(pfd[0]);
}

/* Two training loops in two processes (as two ranks would run them), each
 * one epoch (tag epoch=0) that waits 60 ms for the loader (a
 * `dataloader.next` of 60 ms) and computes 40 ms, with times given to the
 * API: each loop waits 60% of the epoch. */
static void ranks(void) {
  pid_t kids[2];
  const uint64_t t0 = strata_now();  // both loops start here: the epoch spans exactly 100 ms
  for (int r = 0; r < 2; ++r) {
    kids[r] = fork();
    if (kids[r] < 0) exit(3);
    if (kids[r] == 0) {
      strata_tag_set_int("epoch", 0);
      strata_complete("dataloader.next", "dataloader", t0, 60000000);
      strata_complete("train.step", "compute", t0 + 60000000, 40000000);
      strata_tag_clear();
      _exit(0);
    }
  }
  for (int r = 0; r < 2; ++r) waitpid(kids[r], NULL, 0);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* m = argv[1];
  if (!strcmp(m, "seq") && argc == 4) {
    seq(argv[2], atoi(argv[3]));
  } else if (!strcmp(m, "rand") && argc == 3) {
    rnd(argv[2]);
  } else if (!strcmp(m, "mixed") && argc == 3) {
    mixed(argv[2]);
  } else if (!strcmp(m, "failed") && argc == 3) {
    failed_first(argv[2]);
  } else if (!strcmp(m, "stdio") && argc == 3) {
    stdio_io(argv[2]);
  } else if (!strcmp(m, "shared") && argc == 5) {
    shared(argv[2], atoi(argv[3]), !strcmp(argv[4], "whole"));
  } else if (!strcmp(m, "fpp") && argc == 4) {
    fpp(argv[2], atoi(argv[3]));
  } else if (!strcmp(m, "epochs") && argc == 4) {
    epochs(argv[2], atoi(argv[3]));
  } else if (!strcmp(m, "dl") && argc == 4) {
    dl(argv[2], atoi(argv[3]));
  } else if (!strcmp(m, "overlap") && argc == 3) {
    overlap(argv[2]);
  } else if (!strcmp(m, "align") && argc == 3) {
    align_io(argv[2]);
  } else if (!strcmp(m, "ranks") && argc == 2) {
    ranks();
  } else if (!strcmp(m, "seeks") && argc == 3) {
    seeks_io(argv[2]);
  } else if (!strcmp(m, "all") && argc == 3) {
    char p[4096];
    snprintf(p, sizeof p, "%s/seq.dat", argv[2]);
    seq(p, 32);
    snprintf(p, sizeof p, "%s/rand.dat", argv[2]);
    rnd(p);
    snprintf(p, sizeof p, "%s/mixed.dat", argv[2]);
    mixed(p);
    snprintf(p, sizeof p, "%s/stdio.txt", argv[2]);
    stdio_io(p);
    snprintf(p, sizeof p, "%s/shared.dat", argv[2]);
    shared(p, 4, 0);
  } else {
    fprintf(stderr, "e2e_workload: bad arguments\n");
    return 2;
  }
  return 0;
}
