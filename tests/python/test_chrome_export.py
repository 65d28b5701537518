"""`strata convert --to chrome` of a real PyTorch job (the example at tiny size:
2 DataLoader workers, 2 epochs, validation after each and a final evaluation)
names processes and threads from what strata knows, nests the complete events
of every thread, and draws one flow arrow per received batch, from the
worker's `dataloader.batch` to the `dataloader.next` that got it (issue 10 §5)."""
import json
import subprocess

import pytest

import conftest
import strata

WORKERS, EPOCHS, TRAIN_STEPS, VAL_STEPS = 2, 2, 64 // 8, 16 // 8
VAL_PASSES = EPOCHS + 1
RECEIVED = EPOCHS * TRAIN_STEPS + VAL_PASSES * VAL_STEPS  # dataloader.next events with a batch


@pytest.fixture(scope="module")
def job(tmp_path_factory, tiny_data):
    tmp = tmp_path_factory.mktemp("chrome")
    out = tmp / "trace"
    conftest.run_traced(out, [conftest.PYTHON, conftest.EXAMPLE, "--data", str(tiny_data), "--tiny",
                              "--epochs", str(EPOCHS), "--ckpt", str(tmp / "ckpt")])
    chrome = tmp / "trace.json"
    conftest.strata_cli("convert", str(out), "--to", "chrome", "-o", str(chrome))
    with open(chrome) as f:
        doc = json.load(f)
    return out, doc["traceEvents"]


def ns(us):
    return round(us * 1000)


def misnested(events):
    """(pid, tid, child, parent) for every complete event that starts inside
    another on its thread and ends after it."""
    bad = []
    by_thread = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, evs in by_thread.items():
        evs.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
        stack = []
        for e in evs:
            s, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            while stack and ns(stack[-1]["ts"]) + ns(stack[-1]["dur"]) <= s:
                stack.pop()
            if stack and end > ns(stack[-1]["ts"]) + ns(stack[-1]["dur"]):
                bad.append((key, e["name"], stack[-1]["name"]))
                continue
            stack.append(e)
    return bad


def test_nesting_check_sees_a_crossing_event():
    crossing = [{"ph": "X", "pid": 1, "tid": 1, "name": "a", "ts": 0.0, "dur": 10.0},
                {"ph": "X", "pid": 1, "tid": 1, "name": "b", "ts": 5.0, "dur": 10.0}]
    assert misnested(crossing) == [((1, 1), "b", "a")]
    assert misnested(crossing[:1] + [dict(crossing[1], tid=2)]) == []


def test_process_and_thread_names(job):
    out, events = job
    infos = strata.trace_info(out)
    workers = {p["pid"]: int(p["metadata"]["dataloader_worker"]) for p in infos if "dataloader_worker" in p["metadata"]}
    assert len(workers) == (EPOCHS + VAL_PASSES) * WORKERS  # one process per worker per loader pass
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert set(names) == {p["pid"] for p in infos}
    main = next(e["pid"] for e in events if e.get("name") == "torch.save")
    assert names[main] == "training loop"
    # Each worker: its id, the loader and epoch its batches carried.
    for pid, wid in workers.items():
        tags = {(e["args"]["tags"]["loader"], e["args"]["tags"]["epoch"])
                for e in events if e["pid"] == pid and e.get("name") == "dataloader.batch"}
        assert len(tags) == 1, (pid, tags)
        loader, epoch = tags.pop()
        assert names[pid] == "DataLoader worker %d (loader %d, epoch %d)" % (wid, loader, epoch)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for pid, wid in workers.items():
        assert threads[(pid, pid)] == "DataLoader worker %d" % wid
    assert threads[(main, main)] == "main thread"
    # Every thread that has events is named.
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"} <= set(threads)


def test_events_nest_on_every_thread(job):
    _, events = job
    assert misnested(events) == []
    # Nothing was dropped to get there: every event of the trace is in the file.
    n = sum(1 for e in events if e["ph"] in ("X", "i", "C"))
    assert n == int(conftest.strata_info_json(job[0])["events"])


def enclosing(events, pid, tid, t, name):
    hits = [e for e in events if e["ph"] == "X" and e["pid"] == pid and e["tid"] == tid and e["name"] == name
            and ns(e["ts"]) <= ns(t) < ns(e["ts"]) + ns(e["dur"])]
    assert len(hits) == 1, (pid, tid, t, name, hits)
    return hits[0]


def test_one_flow_per_received_batch(job):
    _, events = job
    main = next(e["pid"] for e in events if e.get("name") == "torch.save")
    nexts = [e for e in events if e["ph"] == "X" and e["name"] == "dataloader.next"]
    assert len(nexts) == RECEIVED and {e["pid"] for e in nexts} == {main}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == RECEIVED and set(starts) == set(ends)
    received = set()
    for fid, s in starts.items():
        f = ends[fid]
        assert s["cat"] == f["cat"] == "dataloader" and s["name"] == f["name"] == "batch"
        assert f["bp"] == "e"
        batch = enclosing(events, s["pid"], s["tid"], s["ts"], "dataloader.batch")
        wait = enclosing(events, f["pid"], f["tid"], f["ts"], "dataloader.next")
        bt, wt = batch["args"]["tags"], wait["args"]["tags"]
        assert (bt["loader"], bt["epoch"], bt["step"]) == (wt["loader"], wt["epoch"], wt["step"])
        assert bt["worker"] == bt["step"] % WORKERS  # batches go round-robin to the workers
        # The batch left its worker before the wait for it returned.
        assert ns(batch["ts"]) + ns(batch["dur"]) <= ns(wait["ts"]) + ns(wait["dur"])
        received.add((wait["tid"], wait["ts"]))
    assert len(received) == RECEIVED  # each wait got exactly one batch
