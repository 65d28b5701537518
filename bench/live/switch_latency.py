#!/usr/bin/python3
"""How fast a mode switch reaches a running traced process (docs/live.md).

Starts a real traced workload under the live channel (4 threads of preads,
LD_PRELOAD=libstrata.so STRATA_LIVE=1), then asks for N switches through the
process's slot exactly as `strata ctl mode` does (request in the mapped slot,
FUTEX_WAKE on the slot's word) and times each one until the writer thread
acknowledges it (applied_seq), i.e. until the record flags every interposer
tests have their new value. Also times the same with one idle process and
reports the rates the slot shows in each mode.

    bench/live/switch_latency.py [BUILD_DIR] [SWITCHES]
"""
import ctypes, mmap, os, signal, statistics, struct, subprocess, sys, tempfile, time

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../build")
switches = int(sys.argv[2]) if len(sys.argv) > 2 else 200
lib = os.path.abspath(os.path.join(build, "lib/libstrata.so"))

# LiveSlot offsets (src/format/live.h); layout() checks the magic and version.
OFF_EVENTS_PER_S = 40 + 512 + 16 + 8 * 9
libc = ctypes.CDLL(None, use_errno=True)
SYS_futex = 202

WORKLOAD = r"""
import os, threading, time
fd = os.open(os.environ["FILE"], os.O_RDONLY)
stop = time.time() + float(os.environ["SECONDS"])
def reader():
    while time.time() < stop:
        for _ in range(200):
            os.pread(fd, 4096, 0)
        time.sleep(0.0005)
ts = [threading.Thread(target=reader) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def find_slot(trace, deadline):
    d = os.path.join(trace, ".live")
    while time.time() < deadline:
        if os.path.isdir(d):
            names = [n for n in os.listdir(d) if n.endswith(".live") and not n.startswith(".")]
            if names:
                return os.path.join(d, names[0])
        time.sleep(0.01)
    raise SystemExit("no slot appeared")


def layout(m):
    magic, version, size = struct.unpack_from("<QII", m, 0)
    assert magic == 0x314556494C415453 and version == 1, hex(magic)
    # request half: wake u32, requested_mode u32, request_seq u64, revert_after u64, snapshot_seq u64;
    # then (next 64) applied_seq u64
    req = (40 + 512 + 16 + 8 * 12 + 8 + 1024 + 2048 + 63) // 64 * 64
    return size, req, req + 64


def measure(busy):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "f")
        with open(data, "wb") as f:
            f.write(os.urandom(1 << 20))
        trace = os.path.join(tmp, "t")
        env = dict(os.environ, LD_PRELOAD=lib, STRATA_DIR=trace, STRATA_LIVE="1", STRATA_MODE="profile",
                   FILE=data, SECONDS="600")
        code = WORKLOAD if busy else "import time; time.sleep(600)"
        p = subprocess.Popen(["/usr/bin/python3", "-c", code], env=env)
        try:
            path = find_slot(trace, time.time() + 30)
            fd = os.open(path, os.O_RDWR)
            m = mmap.mmap(fd, 0)
            size, req, ack = layout(m)
            addr = ctypes.addressof(ctypes.c_char.from_buffer(m, req))
            lat = []
            rates = {}
            for i in range(switches):
                mode = 2 if i % 2 == 0 else 1
                seq = struct.unpack_from("<Q", m, req + 8)[0] + 1
                struct.pack_into("<I", m, req + 4, mode)
                struct.pack_into("<Q", m, req + 16, 0)
                struct.pack_into("<Q", m, req + 8, seq)
                t0 = time.perf_counter()
                struct.pack_into("<I", m, req, (struct.unpack_from("<I", m, req)[0] + 1) & 0xFFFFFFFF)
                libc.syscall(SYS_futex, ctypes.c_void_p(addr), 1, 1, None, None, 0)
                while struct.unpack_from("<Q", m, ack)[0] != seq:
                    if time.perf_counter() - t0 > 5:
                        raise SystemExit("switch %d not applied in 5 s" % i)
                    time.sleep(0.0001)
                lat.append((time.perf_counter() - t0) * 1e3)
                if busy and i in (0, 1):  # let the rates of each mode settle once
                    time.sleep(2.5)
                    rates[mode] = struct.unpack_from("<Q", m, OFF_EVENTS_PER_S)[0]
                time.sleep(0.02)
            m.close()
            os.close(fd)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
        return lat, rates


for busy in (False, True):
    lat, rates = measure(busy)
    lat.sort()
    print("%-32s switches %d: median %.2f ms, p99 %.2f ms, max %.2f ms" % (
        "busy (4 threads of preads)" if busy else "idle process", len(lat), statistics.median(lat),
        lat[int(len(lat) * 0.99) - 1], lat[-1]))
    if rates:
        print("  events/s in the slot: trace %d, profile %d" % (rates.get(2, 0), rates.get(1, 0)))
