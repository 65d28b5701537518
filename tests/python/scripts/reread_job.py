"""Reads every file of a directory whole in each of N epochs with numpy:
`.npz` archives (numpy reads the zip index again: more than the file per
open) or `.npy` arrays (the file once per open).

    reread_job.py DIR gen npz|npy FILES
    reread_job.py DIR read EPOCHS [fork]   (fork: each pass in its own child process)
"""
import os
import sys

import numpy as np

top, what = sys.argv[1], sys.argv[2]
if what == "gen":
    os.makedirs(top, exist_ok=True)
    for i in range(int(sys.argv[4])):
        x = np.arange(1000, dtype=np.float32) + i
        if sys.argv[3] == "npz":
            np.savez(os.path.join(top, "s%03d.npz" % i), x=x, y=np.int64(i))
        else:
            np.save(os.path.join(top, "s%03d.npy" % i), x)
else:
    def one_pass():
        for name in sorted(os.listdir(top)):
            path = os.path.join(top, name)
            if name.endswith(".npz"):
                with np.load(path) as z:
                    z["x"].sum()
                    z["y"]
            else:
                np.load(path).sum()

    for epoch in range(int(sys.argv[3])):
        if sys.argv[4:] == ["fork"]:
            pid = os.fork()
            if pid == 0:
                one_pass()
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert status == 0
        else:
            one_pass()
