"""DataLoader behaviour that strata's patches must not change: the user's
worker_init_fn runs once per worker with its id, a dataset object is pickled
to spawn workers as before, an exception raised in a worker reaches the loop
with its type and message, and wrapped functions keep their metadata.
Prints one JSON line; run plain and under strata run by test_semantics.py."""
import json
import os
import pickle
import sys

import torch
from torch.utils.data import DataLoader, Dataset

out_dir, method = sys.argv[1], sys.argv[2]


class Bad(Exception):
    pass


class Items(Dataset):
    def __init__(self):
        self.secret = "kept"

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 9:
            raise Bad("bad sample %d" % i)
        return i * self.secret.count("e")


def init(worker_id):
    info = torch.utils.data.get_worker_info()
    with open(os.path.join(out_dir, "init-%d-%d" % (worker_id, os.getpid())), "w") as f:
        f.write("%d %d %s" % (info.id, info.num_workers, info.dataset.secret))


def main():
    loader = DataLoader(Items(), batch_size=2, num_workers=2, worker_init_fn=init,
                        multiprocessing_context=method)
    got, err = [], None
    try:
        for b in loader:
            got.extend(b.tolist())
    except Bad as e:
        err = ["Bad", str(e).splitlines()[0]]
    inits = sorted(open(os.path.join(out_dir, f)).read() for f in os.listdir(out_dir) if f.startswith("init-"))
    meta = [torch.save.__name__, torch.load.__module__, torch.nn.Module.__call__.__name__,
            torch.Tensor.backward.__name__, torch.optim.SGD.step.__name__,
            DataLoader.__iter__.__qualname__, torch.utils.data._utils.worker._worker_loop.__module__]
    pickle.dumps(Items())
    print(json.dumps({"got": got, "err": err, "inits": inits, "meta": meta,
                      "worker_init_fn_after": loader.worker_init_fn is init}))


if __name__ == "__main__":
    main()
