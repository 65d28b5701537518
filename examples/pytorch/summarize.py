#!/usr/bin/python3
"""What the trace of train.py tells: per epoch, its time, how much of it the
training loop waited on the DataLoader, the data set vs checkpoint bytes, and
the first-epoch (cold) read cost.

    /usr/bin/python3 examples/pytorch/summarize.py t
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "python"))
import strata  # noqa: E402


def main(path):
    df = strata.read_trace(path)
    main_pid = int(df.loc[df["name"] == "torch.save", "pid"].iloc[0]) if (df["name"] == "torch.save").any() \
        else int(df["pid"].iloc[0])
    m = df[df["pid"] == main_pid]
    epochs = m[m["name"] == "dataloader.epoch"]
    waits = m[m["name"] == "dataloader.next"]
    reads = df[(df["cat"] == "POSIX") & df["name"].astype(str).str.startswith("read") & (df["ret"] > 0)]
    paths = reads["path"].astype(str)
    data = reads[paths.str.endswith((".png", ".npy"))]
    print("%-6s %10s %12s %8s %12s %12s" % ("epoch", "loader s", "waited s", "wait %", "sample MiB", "read ms"))
    for e, ep in epochs.groupby("epoch"):
        span = ep["dur"].sum() / 1e9
        wait = waits[waits["epoch"] == e]["dur"].sum() / 1e9
        d = data[data["epoch"] == e]
        print("%-6d %10.2f %12.2f %8.1f %12.2f %12.1f" % (e, span, wait, 100 * wait / span if span else 0,
                                                        d["ret"].sum() / 2**20, d["dur"].sum() / 1e6))
    ck = df[df["cat"] == "checkpoint"]
    print("\ncheckpoints:")
    for _, r in ck.sort_values("ts").iterrows():
        print("  %-10s %-50s %10d B %8.1f ms  epoch %s" % (r["name"], r["path"], r["size"], r["dur"] / 1e6, r["epoch"]))
    print("\ndata set: %d files, %.1f MiB read by %d worker processes; checkpoints: %.1f MiB written"
          % (data["path"].nunique(), data["ret"].sum() / 2**20, data["pid"].nunique(),
             ck[ck["name"] == "torch.save"]["size"].sum() / 2**20))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "t")
