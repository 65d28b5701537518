"""A PyTorch training job for the per-epoch and critical-path tests
(test_epochs.py). Each sample opens its file and reads it in --chunk pieces
(--drop-cache: from the disk, not the page cache), then sleeps --sleep-ms in
the worker (work that is not I/O); the loop sleeps --step-ms per batch. After
each epoch a validation pass over a second DataLoader with --val-workers
workers (--val-each-epoch); after the epochs an evaluation pass over another
(--eval) and a pause of --after-s seconds. --rank-sleep-ms and --rank-step-ms
(comma-separated, one value per rank) override --sleep-ms and --step-ms for
the rank in $RANK: launched as ranks (scripts/ranks_launch.py), each rank
can wait on its loader differently."""
import argparse
import os
import time

from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, files, chunk, sleep_ms, drop_cache):
        self.files, self.chunk, self.sleep_ms, self.drop_cache = files, chunk, sleep_ms, drop_cache

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb", buffering=0) as f:
            if self.drop_cache:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            while f.read(self.chunk):
                pass
        if self.sleep_ms:
            time.sleep(self.sleep_ms / 1000.0)
        return i


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--context", default=None, help="multiprocessing context: fork, spawn, forkserver")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=1 << 20)
    ap.add_argument("--sleep-ms", type=float, default=0)
    ap.add_argument("--step-ms", type=float, default=0)
    ap.add_argument("--drop-cache", action="store_true")
    ap.add_argument("--eval", action="store_true")
    ap.add_argument("--after-s", type=float, default=0)
    ap.add_argument("--val-each-epoch", action="store_true")
    ap.add_argument("--val-workers", type=int, default=None, help="workers of the validation loader (default --workers)")
    ap.add_argument("--rank-sleep-ms", default=None)
    ap.add_argument("--rank-step-ms", default=None)
    a = ap.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    if a.rank_sleep_ms:
        a.sleep_ms = float(a.rank_sleep_ms.split(",")[rank])
    if a.rank_step_ms:
        a.step_ms = float(a.rank_step_ms.split(",")[rank])
    files = sorted(os.path.join(a.data, n) for n in os.listdir(a.data) if n.startswith("s"))
    ds = Files(files, a.chunk, a.sleep_ms, a.drop_cache)
    kw = {"multiprocessing_context": a.context} if a.context and a.workers else {}
    # Batches are lists of sample indices: no tensor work beside what is measured.
    loader = DataLoader(ds, batch_size=a.batch, num_workers=a.workers, collate_fn=list, **kw)
    val_workers = a.workers if a.val_workers is None else a.val_workers
    val_kw = {"multiprocessing_context": a.context} if a.context and val_workers else {}
    validation = DataLoader(Files(files, a.chunk, 0, False), batch_size=a.batch, num_workers=val_workers,
                            collate_fn=list, **val_kw)
    for _ in range(a.epochs):
        for _ in loader:
            time.sleep(a.step_ms / 1000.0)
        if a.val_each_epoch:
            for _ in validation:
                pass
    if a.eval:  # a final evaluation over its own loader, after the last epoch
        evaluation = DataLoader(Files(files, a.chunk, 0, False), batch_size=a.batch, num_workers=a.workers,
                                collate_fn=list, **kw)
        for _ in evaluation:
            pass
    time.sleep(a.after_s)


if __name__ == "__main__":
    main()
