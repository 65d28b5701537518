"""PyTorch patterns the automatic instrumentation met wrongly (a review of
the Python layer): each program runs plain and under `strata run`, prints the
same, and the events name the right loader, file and size.

- a spawn DataLoader in a program that sets its own PYTHONPATH (its workers
  start without strata and crashed unpickling strata's worker_init_fn);
- validation inside a training step: the training loader's later batches
  carried the validation loader's tag;
- classes made at run time (torch.fx, a class per layer) were kept alive;
- torch.load from a file object recorded the stream's last position;
- an IterableDataset's end-of-data marker was recorded as a batch;
- PIL.Image.load of an image opened from a file object had no path."""
import os
import subprocess

import pytest

import conftest
import strata

torch = pytest.importorskip("torch")


def run_both(tmp_path, source, *args):
    script = tmp_path / "program.py"
    # Files the program writes go beside it, whatever the current directory.
    script.write_text("import os\nos.chdir(os.path.dirname(os.path.abspath(__file__)))\n" + source)
    cmd = [conftest.PYTHON, str(script)] + [str(a) for a in args]
    env = conftest.clean_env()
    env.pop("PYTHONPATH", None)
    plain = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    out = tmp_path / "trace"
    # strata run alone puts the Python layer on the path, as for a user.
    traced = subprocess.run([conftest.strata_bin(), "run", "-q", "-o", str(out), "--"] + cmd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout), traced.stderr[-3000:]
    return out, plain.stdout


SPAWN_WITH_OWN_PYTHONPATH = r'''
import os, sys, torch
from torch.utils.data import DataLoader, TensorDataset
if __name__ == "__main__":
    os.environ["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    for ctx in ("spawn", "forkserver"):
        dl = DataLoader(TensorDataset(torch.arange(6.)), batch_size=2, num_workers=1,
                        multiprocessing_context=ctx)
        print(ctx, [b[0].tolist() for b in dl])
'''


def test_spawned_workers_of_a_program_with_its_own_pythonpath_run(tmp_path):
    out, stdout = run_both(tmp_path, SPAWN_WITH_OWN_PYTHONPATH)
    assert stdout.splitlines()[0] == "spawn [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]"
    df = strata.read_trace(out)
    # the main process still records its loader
    assert int((df["name"] == "dataloader.next").sum()) == 2 * 3


VALIDATION_INSIDE_A_STEP = r'''
import torch
from torch.utils.data import DataLoader, TensorDataset
train = DataLoader(TensorDataset(torch.arange(8.)), batch_size=2)
val = DataLoader(TensorDataset(torch.arange(4.)), batch_size=2)
model = torch.nn.Linear(1, 1)
for epoch in range(2):
    for step, (x,) in enumerate(train):
        model(x[:, None])
        if step == 1:
            for (v,) in val:
                model(v[:, None])
    torch.save(model.state_dict(), "ckpt%d.pt" % epoch)
print("done")
'''


def test_validation_inside_a_training_step_keeps_the_loaders_apart(tmp_path):
    out, _ = run_both(tmp_path, VALIDATION_INSIDE_A_STEP)
    df = strata.read_trace(out)
    nxt = df[df["name"] == "dataloader.next"]
    # 4 training batches and 2 validation batches per epoch
    per = nxt.groupby(["epoch", "loader"]).size().to_dict()
    assert per == {(0, 0): 4, (0, 1): 2, (1, 0): 4, (1, 1): 2}
    assert sorted(nxt[nxt["loader"] == 0]["step"].tolist()) == [0, 0, 1, 1, 2, 2, 3, 3]
    fwd = df[df["name"] == "Linear.forward"].sort_values("ts")
    assert fwd["loader"].tolist() == [0, 0, 1, 1, 0, 0] * 2
    assert fwd["step"].tolist() == [0, 1, 0, 1, 2, 3] * 2
    # each loader's pass ends once per epoch, under its own tags
    ends = df[df["name"] == "dataloader.epoch"]
    assert ends.groupby(["epoch", "loader"]).size().to_dict() == {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 1}
    # the checkpoint after the training pass: its epoch, no validation tag
    saves = df[df["name"] == "torch.save"].sort_values("ts")
    assert saves["epoch"].tolist() == [0, 1]
    assert saves["loader"].isna().all()


CLASSES_MADE_AT_RUN_TIME = r'''
import gc, weakref, torch
refs = []
for i in range(200):
    cls = type("Dyn%d" % i, (torch.nn.Module,), {"forward": lambda self, x: x + 1})
    m = cls()
    m(torch.ones(1))
    refs.append(weakref.ref(cls))
    del cls, m
gc.collect()
print("classes still alive:", sum(r() is not None for r in refs))
'''


def test_classes_made_at_run_time_are_freed(tmp_path):
    out, stdout = run_both(tmp_path, CLASSES_MADE_AT_RUN_TIME)
    assert stdout == "classes still alive: 0\n"
    df = strata.read_trace(out)
    assert int(df["name"].astype(str).str.match(r"Dyn\d+\.forward").sum()) == 200


TORCH_LOAD_FROM_STREAMS = r'''
import io, torch
t = torch.arange(1000.)
torch.save(t, "by_path.pt")
with open("by_file.pt", "wb") as f:
    torch.save(t, f)
with open("by_file.pt", "rb") as f:
    a = torch.load(f)
buf = io.BytesIO()
torch.save(t, buf)
buf.seek(0)
b = torch.load(buf)
print(bool((a == t).all()), bool((b == t).all()), len(buf.getvalue()))
'''


def test_torch_load_from_a_stream_records_the_checkpoints_bytes(tmp_path):
    out, stdout = run_both(tmp_path, TORCH_LOAD_FROM_STREAMS)
    in_memory = int(stdout.split()[2])
    df = strata.read_trace(out)
    loads = df[df["name"] == "torch.load"].sort_values("ts")
    on_disk = os.path.getsize(tmp_path / "by_file.pt")
    assert loads["size"].tolist() == [on_disk, in_memory]
    assert loads["ret"].tolist() == [on_disk, in_memory]
    assert loads["path"].astype(str).str.endswith("by_file.pt").tolist()[0]


ITERABLE_DATASET = r'''
import torch
from torch.utils.data import DataLoader, IterableDataset
class Shards(IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        return iter(range(info.id, 10, info.num_workers))
if __name__ == "__main__":
    print([b.tolist() for b in DataLoader(Shards(), batch_size=3, num_workers=2)])
'''


def test_iterable_dataset_workers_record_one_event_per_batch(tmp_path):
    out, stdout = run_both(tmp_path, ITERABLE_DATASET)
    assert stdout == "[[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]\n"
    df = strata.read_trace(out)
    assert int((df["name"] == "dataloader.batch").sum()) == 4
    assert int((df["name"] == "dataloader.collate").sum()) == 4


PIL_FROM_FILE_OBJECT = r'''
from PIL import Image
Image.new("RGB", (8, 4)).save("img.png")
with open("img.png", "rb") as f:
    im = Image.open(f)
    im.load()
print(im.size)
'''


def test_pil_load_from_a_file_object_names_the_file(tmp_path):
    pytest.importorskip("PIL")
    out, _ = run_both(tmp_path, PIL_FROM_FILE_OBJECT)
    df = strata.read_trace(out)
    loads = df[df["name"] == "PIL.Image.load"]
    assert len(loads) == 1
    assert str(loads["path"].iloc[0]).endswith("img.png")
    assert int(loads["size"].iloc[0]) == 8 * 4 * 3
