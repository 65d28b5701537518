/* A C library loaded after strata_start: with ctypes by
 * tests/python/test_attach.py, with dlmopen by programs/attach.c. Its calls
 * reach strata only if objects loaded later are patched too. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* open, `count` writes of 100 bytes, close: returns the bytes written. */
long ctypes_io_write(const char* path, int count) {
  char buf[100];
  memset(buf, 'c', sizeof(buf));
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  long total = 0;
  for (int i = 0; i < count; ++i) total += write(fd, buf, sizeof(buf));
  close(fd);
  return total;
}

/* fopen, one fread of up to 64 KiB, fclose: returns the bytes read. */
long ctypes_io_read(const char* path) {
  static char buf[65536];
  FILE* f = fopen(path, "rb");
  if (!f) return -1;
  long n = (long)fread(buf, 1, sizeof(buf), f);
  fclose(f);
  return n;
}
