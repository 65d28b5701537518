/* A training-like loop with known structure for `strata efg` tests:
 *   epoch_loops DIR EPOCHS STEPS
 * per epoch: STEPS x {open DIR/train/sample_<s>, read 4 KiB x3, close}, then a
 * checkpoint: open DIR/ckpt/model.ckpt, write 8 KiB, close. The samples must
 * exist (the test makes them, untraced). Nothing else touches files. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[8192];

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int epochs = atoi(argv[2]), steps = atoi(argv[3]);
  char path[4096];
  for (int e = 0; e < epochs; ++e) {
    for (int s = 0; s < steps; ++s) {
      snprintf(path, sizeof path, "%s/train/sample_%d", argv[1], s);
      int fd = open(path, O_RDONLY);
      if (fd < 0) return 3;
      for (int r = 0; r < 3; ++r)
        if (read(fd, buf, 4096) != 4096) return 4;
      close(fd);
    }
    snprintf(path, sizeof path, "%s/ckpt/model.ckpt", argv[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 5;
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 6;
    close(fd);
  }
  return 0;
}
