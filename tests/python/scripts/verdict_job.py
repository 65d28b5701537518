"""A small PyTorch training job for the verdict tests (test_verdict.py): each
sample opens its file and reads it (plus --cold-bytes more from the disk in epoch 0), then
burns --cpu-ms of CPU (--drop-cache: reads come from the disk); the loop sleeps --step-ms per batch and saves a
--ckpt-mb checkpoint after each epoch."""
import argparse
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

EPOCH = [0]
DROP_CACHE = [False]


def burn(ms):
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        x += 1


class Files(Dataset):
    def __init__(self, files, chunk, cpu_ms, cold_file, cold_bytes):
        self.files, self.chunk, self.cpu_ms = files, chunk, cpu_ms
        self.cold_file, self.cold_bytes = cold_file, cold_bytes

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb", buffering=0) as f:
            if DROP_CACHE[0]:  # read from the disk, not the page cache
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            while f.read(self.chunk):
                pass
        if EPOCH[0] == 0 and self.cold_bytes:
            with open(self.cold_file, "rb", buffering=0) as f:
                # cold: from the disk (the test syncs the file), not the page cache
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                left = self.cold_bytes
                while left > 0 and f.read(min(self.chunk, left)):
                    left -= self.chunk
        burn(self.cpu_ms)
        return torch.zeros(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--persistent", action="store_true")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--chunk", type=int, default=1 << 20)
    ap.add_argument("--cpu-ms", type=float, default=0)
    ap.add_argument("--step-ms", type=float, default=0)
    ap.add_argument("--cold-bytes", type=int, default=0)
    ap.add_argument("--ckpt-mb", type=int, default=0)
    ap.add_argument("--drop-cache", action="store_true")
    a = ap.parse_args()
    DROP_CACHE[0] = a.drop_cache
    files = sorted(os.path.join(a.data, n) for n in os.listdir(a.data) if n.startswith("s"))
    ds = Files(files, a.chunk, a.cpu_ms, os.path.join(a.data, "cold.bin"), a.cold_bytes)
    loader = DataLoader(ds, batch_size=a.batch, num_workers=a.workers,
                        persistent_workers=a.persistent and a.workers > 0)
    for epoch in range(a.epochs):
        EPOCH[0] = epoch
        for _ in loader:
            time.sleep(a.step_ms / 1000.0)
        if a.ckpt_mb:
            torch.save({"w": torch.ones(a.ckpt_mb << 18)}, os.path.join(a.data, "..", "ckpt.pt"))


if __name__ == "__main__":
    main()
