// An MPI job for the end-to-end tests (mpi_test.cc): file per process and one
// shared file, as a user's job does them.
//
//   mpi_io DIR [ok|abort|hang]
//   rank r: DIR/rank<r>.dat: 4 x write((r + 1) * 64 KiB) (POSIX), close,
//           then read back whole with read(1 MiB) until the end;
//   all:    DIR/shared.dat through MPI-IO: MPI_File_write_at_all of 1 MiB at
//           r MiB, MPI_File_sync, MPI_File_read_at_all of rank (r + 1) % n's
//           MiB, MPI_File_close.
// Rank 0 alone prints (so the output does not depend on scheduling): each
// rank's byte counts and a checksum of what the ranks read back.
// abort: rank 1 calls MPI_Abort(7) after its own file; hang: every rank
// blocks in pause() after its own file (rank 0 prints "hanging" first).
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kChunk = 65536, kWrites = 4, kShared = 1 << 20 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2);  // rank 0 gathers into a fixed array
  const char* dir = argc > 1 ? argv[1] : ".";
  const char* mode = argc > 2 ? argv[2] : "ok";
  char* buf = malloc(kShared);
  char* back = malloc(kShared);
  for (int i = 0; i < kShared; ++i) buf[i] = (char)(rank * 31 + i);

  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.dat", dir, rank);
  const size_t each = (size_t)(rank + 1) * kChunk;
  int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
  for (int k = 0; k < kWrites; ++k)
    if (fd < 0 || write(fd, buf, each) != (ssize_t)each) {
      perror(path);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  close(fd);
  if (!strcmp(mode, "abort") && rank == 1) {
    fprintf(stderr, "rank 1 aborting\n");
    MPI_Abort(MPI_COMM_WORLD, 7);
  }
  if (!strcmp(mode, "hang")) {
    if (rank == 0) printf("hanging\n");
    fflush(stdout);
    for (;;) pause();
  }

  snprintf(path, sizeof path, "%s/shared.dat", dir);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
    MPI_Abort(MPI_COMM_WORLD, 4);
  MPI_File_write_at_all(fh, (MPI_Offset)rank * kShared, buf, kShared, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_read_at_all(fh, (MPI_Offset)((rank + 1) % size) * kShared, back, kShared, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  long sums[2] = {0, 0};  // shared part read back, own file read back
  for (int i = 0; i < kShared; ++i) sums[0] += (unsigned char)back[i];

  snprintf(path, sizeof path, "%s/rank%d.dat", dir, rank);
  fd = open(path, O_RDONLY);
  ssize_t n;
  while ((n = read(fd, back, kShared)) > 0) sums[1] += n;
  close(fd);

  long all[2 * 64] = {0};
  MPI_Gather(sums, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    long checksum = 0;
    for (int r = 0; r < size && r < 64; ++r) {
      printf("rank %d: wrote %zu, read back %ld\n", r, (size_t)(r + 1) * kChunk * kWrites, all[2 * r + 1]);
      checksum += all[2 * r];
    }
    printf("%d ranks, shared file checksum %ld\n", size, checksum);
  }
  free(buf);
  free(back);
  MPI_Finalize();
  return 0;
}
