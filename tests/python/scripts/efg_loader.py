"""A tiny PyTorch training job with a known loop structure for `strata efg`:
EPOCHS epochs of STEPS steps, each step a DataLoader batch of one .npy sample
(num_workers=0, so the reads happen in this process), then a checkpoint
(torch.save) per epoch.

    efg_loader.py DATA_DIR CKPT_DIR EPOCHS STEPS
The samples must exist (the test writes them untraced)."""
import os
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, root, n):
        self.files = [os.path.join(root, "s%03d.npy" % i) for i in range(n)]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.from_numpy(np.load(self.files[i]))


def main(data, ckpt, epochs, steps):
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(data, steps), batch_size=1, shuffle=False, num_workers=0)
    for epoch in range(epochs):
        for batch in loader:
            loss = model(batch.float()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save(model.state_dict(), os.path.join(ckpt, "model.pt"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
