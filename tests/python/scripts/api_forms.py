"""Uses every form of strata's Python API once, with known counts; run under
`strata run` by test_api_traced.py. argv[1]: a small data file to read."""
import sys
import threading

import strata

data_path = sys.argv[1]
assert strata.enabled(), "runtime not loaded"
if len(sys.argv) > 2:   # which binding the calls go through
    assert (strata._capi.fast is not None) == (sys.argv[2] == "fast"), sys.argv[2]


def read_file():
    with open(data_path, "rb") as f:
        return f.read()


# context manager (with tags for the block)
with strata.region("block", cat="test", phase="warmup"):
    read_file()


# decorator on a function (3 calls), one of which raises
@strata.trace
def double(x):
    if x < 0:
        raise ValueError("negative")
    return 2 * x


assert [double(1), double(2)] == [2, 4]
try:
    double(-1)
except ValueError as e:
    assert e.args == ("negative",)
else:
    raise AssertionError("exception lost")


# decorator on methods (2 calls of m, 1 of s, 1 of c)
class Loader:
    @strata.trace
    def m(self):
        return 1

    @strata.trace
    @staticmethod
    def s():
        return 2

    @strata.trace(name="Loader.classmethod", cat="test")
    @classmethod
    def c(cls):
        return cls.__name__


assert Loader().m() + Loader().m() == 2 and Loader.s() == 2 and Loader.c() == "Loader"
assert Loader.m.__name__ == "m" and Loader.m.__qualname__ == "Loader.m"


# decorator on a generator: 4 items -> 5 resumptions, send() forwarded
@strata.trace(name="gen", cat="test")
def gen(n):
    total = 0
    for i in range(n):
        got = yield i
        total += got or 0
    return total


assert list(gen(4)) == [0, 1, 2, 3]
g = gen(2)
assert next(g) == 0 and g.send(5) == 1
try:
    g.send(6)
except StopIteration as stop:
    assert stop.value == 11

# coroutine (1 event) and async generator (3 items -> 4 resumptions)
import asyncio  # noqa: E402


@strata.trace(name="coro", cat="test")
async def coro():
    await asyncio.sleep(0)
    return 5


@strata.trace(name="agen", cat="test")
async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


# an async generator that catches what athrow() sends in: 2 resumptions
@strata.trace(name="agen_catch", cat="test")
async def agen_catch():
    try:
        yield 1
    except ValueError:
        yield "caught"


async def use_async():
    assert await coro() == 5
    assert [x async for x in agen(3)] == [0, 1, 2]
    g = agen_catch()
    assert await g.__anext__() == 1
    assert await g.athrow(ValueError) == "caught"
    await g.aclose()


asyncio.run(use_async())

# iterate: 5 items, step tag 10..14 on the POSIX reads of the body
for i, x in enumerate(strata.iterate(range(5), name="loop", tag="step", cat="test", start=10)):
    assert x == i
    read_file()

# tags: int and str, as context manager and persistent
with strata.tag(epoch=7, stage="train"):
    read_file()
# an int past 64 bits: a string, as without strata nothing fails
with strata.tag(big=2 ** 70):
    read_file()


# region as a decorator: its tags on each call (2 calls)
@strata.region("decorated", cat="test", stage="eval")
def decorated():
    read_file()


decorated()
decorated()
strata.tag(run="r1")
strata.instant("mark", cat="test")
strata.counter("queue_depth", 42)
t0 = strata.now()
strata.complete("app_read", "test", t0, 1000, path="/virtual/file", size=4096, ret=4000)
strata.complete("plain", "test", t0, 500)
strata.set_metadata("purpose", "api-forms")


def in_thread():
    strata.thread_name("helper")
    with strata.region("thread_block", cat="test"):
        read_file()   # no tags of the main thread here


t = threading.Thread(target=in_thread)
t.start()
t.join()
print("ok")
