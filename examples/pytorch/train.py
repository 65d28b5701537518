#!/usr/bin/python3
"""A small but real image-classification training, the job strata's README traces.

    /usr/bin/python3 examples/pytorch/train.py --data /tmp/imgs              # ~1 min on 2 cores
    strata run -o t -- /usr/bin/python3 examples/pytorch/train.py --data /tmp/imgs
    strata analyze t --by epoch

It makes a data set of small PNG (or .npy) images locally if --data does not
hold one yet (nothing is downloaded): 10 classes of 32x32 RGB pictures, each
class a coloured shape on noise. Then it trains a small CNN on the CPU with a
torch DataLoader (2 worker processes), runs validation after each epoch, writes
a checkpoint each epoch, and at the end loads the last checkpoint back into a
fresh model and evaluates it. Nothing here knows about strata.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 10


# ---- data set -----------------------------------------------------------------

def _make_image(rng, label, size):
    """A learnable picture: a class-specific colour and shape on noise."""
    img = rng.integers(0, 96, size=(size, size, 3), dtype=np.uint8)
    hue = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [255, 0, 255],
                    [0, 255, 255], [255, 128, 0], [128, 0, 255], [255, 255, 255],
                    [128, 128, 128]], dtype=np.uint8)[label]
    c = size // 2 + rng.integers(-size // 8, size // 8 + 1, size=2)
    r = size // 4
    yy, xx = np.mgrid[0:size, 0:size]
    if label % 2 == 0:
        mask = (yy - c[0]) ** 2 + (xx - c[1]) ** 2 <= r * r          # disc
    else:
        mask = (abs(yy - c[0]) <= r) & (abs(xx - c[1]) <= r)          # square
    img[mask] = hue
    return img


def make_dataset(root, n_train, n_val, size, fmt, seed=0):
    """Writes root/{train,val}/<class>/<index>.<fmt> unless root/done.json exists."""
    marker = os.path.join(root, "done.json")
    want = {"train": n_train, "val": n_val, "size": size, "format": fmt, "seed": seed}
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == want:
                return
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("val", n_val)):
        for c in range(NUM_CLASSES):
            os.makedirs(os.path.join(root, split, "c%d" % c), exist_ok=True)
        for i in range(n):
            label = i % NUM_CLASSES
            img = _make_image(rng, label, size)
            path = os.path.join(root, split, "c%d" % label, "%06d.%s" % (i, fmt))
            if fmt == "png":
                Image.fromarray(img).save(path)
            else:
                np.save(path, img)
    with open(marker, "w") as f:
        json.dump(want, f)


class ImageFiles(Dataset):
    """root/<split>/c<label>/*.png|*.npy -> (float tensor CHW in [0,1], label)."""

    def __init__(self, root, split):
        self.files = []
        base = os.path.join(root, split)
        for c in sorted(os.listdir(base)):
            for name in sorted(os.listdir(os.path.join(base, c))):
                self.files.append((os.path.join(base, c, name), int(c[1:])))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        if path.endswith(".npy"):
            arr = np.load(path)
        else:
            with Image.open(path) as im:
                arr = np.array(im.convert("RGB"))
        x = torch.from_numpy(arr).permute(2, 0, 1).float().div_(255.0)
        return x, label


# ---- model --------------------------------------------------------------------

class SmallCNN(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * (size // 4) * (size // 4), 64)
        self.fc2 = nn.Linear(64, NUM_CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    model.train()
    return correct / max(total, 1)


# ---- main -----------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="./strata-example-data", help="data set directory (made if needed)")
    p.add_argument("--ckpt", default=None, help="checkpoint directory (default: <data>/checkpoints)")
    p.add_argument("--samples", type=int, default=4000, help="training images")
    p.add_argument("--val-samples", type=int, default=500, help="validation images")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--format", choices=("png", "npy"), default="png")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--start-method", choices=("fork", "spawn", "forkserver"), default=None,
                   help="multiprocessing start method of the workers (default: torch's, fork)")
    p.add_argument("--persistent-workers", action="store_true")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--tiny", action="store_true",
                   help="test size: 64 train / 16 val images of 16x16, 2 epochs, batch 8 "
                        "(flags given explicitly override these)")
    p.add_argument("--generate-only", action="store_true", help="make the data set and stop")
    p.add_argument("--summary", default=None, help="write a JSON summary of the run here")
    if "--tiny" in (sys.argv[1:] if argv is None else argv):  # explicit flags still win
        p.set_defaults(samples=64, val_samples=16, image_size=16, epochs=2, batch_size=8)
    return p.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    t_start = time.perf_counter()
    make_dataset(a.data, a.samples, a.val_samples, a.image_size, a.format, a.seed)
    if a.generate_only:
        return 0
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    ckpt_dir = a.ckpt or os.path.join(a.data, "checkpoints")
    os.makedirs(ckpt_dir, exist_ok=True)

    train_set, val_set = ImageFiles(a.data, "train"), ImageFiles(a.data, "val")
    kw = dict(num_workers=a.workers)
    if a.workers > 0:
        kw["persistent_workers"] = a.persistent_workers
        if a.start_method:
            kw["multiprocessing_context"] = a.start_method
    train_loader = DataLoader(train_set, batch_size=a.batch_size, shuffle=True, **kw)
    val_loader = DataLoader(val_set, batch_size=a.batch_size, shuffle=False, **kw)

    model = SmallCNN(a.image_size)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    epochs = []
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        total_loss, steps = 0.0, 0
        for x, y in train_loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total_loss += loss.item()
            steps += 1
        acc = evaluate(model, val_loader)
        path = os.path.join(ckpt_dir, "epoch%d.pt" % epoch)
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict()}, path)
        epochs.append({"epoch": epoch, "steps": steps, "loss": total_loss / max(steps, 1),
                       "val_acc": acc, "seconds": time.perf_counter() - t0, "checkpoint": path,
                       "checkpoint_bytes": os.path.getsize(path)})
        print("epoch %d: %d steps, loss %.3f, val acc %.3f, %.1f s, checkpoint %s"
              % (epoch, steps, epochs[-1]["loss"], acc, epochs[-1]["seconds"], path), flush=True)

    # Load the last checkpoint back into a fresh model and evaluate it.
    restored = SmallCNN(a.image_size)
    state = torch.load(epochs[-1]["checkpoint"])
    restored.load_state_dict(state["model"])
    final_acc = evaluate(restored, val_loader)
    wall = time.perf_counter() - t_start
    print("restored epoch %d: val acc %.3f; total %.1f s" % (state["epoch"], final_acc, wall), flush=True)
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump({"epochs": epochs, "final_val_acc": final_acc, "wall_seconds": wall,
                       "train_files": [p for p, _ in train_set.files],
                       "val_files": [p for p, _ in val_set.files],
                       "batch_size": a.batch_size, "workers": a.workers}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
