"""A DataLoader whose worker 0 is killed (SIGKILL) mid-epoch, while building
the sample KILL_AT; run under `strata run` by test_worker_killed.py.
argv: data_dir n_files kill_at start_method"""
import os
import signal
import sys

from torch.utils.data import DataLoader, Dataset

import strata

data_dir, n, kill_at, method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


class Files(Dataset):
    def __len__(self):
        return n

    def __getitem__(self, i):
        if i == kill_at:
            strata.flush()              # what was recorded so far is on disk
            os.kill(os.getpid(), signal.SIGKILL)
        with open(os.path.join(data_dir, "f%d" % i), "rb") as f:
            return len(f.read())


def as_list(batch):  # no tensors: nothing shared through the dead worker's fds
    return batch


def main():
    loader = DataLoader(Files(), batch_size=1, num_workers=2, shuffle=False,
                        collate_fn=as_list, multiprocessing_context=method)
    got = []
    try:
        for x in loader:
            got.extend(x)
    except RuntimeError as e:
        assert "DataLoader worker" in str(e), e   # "killed by signal" or "exited unexpectedly"
        strata.instant("worker_death_seen", cat="test")
        print("caught", len(got))
    else:
        raise AssertionError("the worker did not die")


if __name__ == "__main__":
    main()
