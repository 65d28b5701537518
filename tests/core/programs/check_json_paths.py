"""Checks a strata JSON output for the non-UTF-8 path tests (launcher_test.cc).

usage: check_json_paths.py lines|doc|pfw FILE HEXPATH...

The file must be valid UTF-8 JSON (one document, one object per line, or
DFTracer's bracketed lines), and each expected path (hex of its bytes) must
appear as a string that, encoded with Python's surrogateescape, gives the exact
bytes back.
"""
import json
import sys


def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)


def main():
    mode, path, *expected = sys.argv[1:]
    raw = open(path, "rb").read()
    text = raw.decode("utf-8")  # strict: the output itself is valid UTF-8
    docs = []
    if mode == "doc":
        docs.append(json.loads(text))
    else:
        for n, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 is JSON text
            line = line.strip(" \t\r")
            if line == "" or (mode == "pfw" and line in ("[", "]")):
                continue
            if mode == "pfw":
                line = line.rstrip(",")
            try:
                docs.append(json.loads(line))
            except ValueError as e:
                print(f"line {n} is not JSON: {e}: {line!r}")
                return 1
    found = set()
    for d in docs:
        for s in strings(d):
            found.add(s.encode("utf-8", "surrogateescape"))
    missing = [h for h in expected if bytes.fromhex(h) not in found]
    if missing:
        print("missing paths:", [bytes.fromhex(h) for h in missing])
        print("some strings seen:", sorted(x for x in found if b"/" in x)[:20])
        return 1
    print(f"OK {len(docs)} documents, {len(expected)} paths")
    return 0


sys.exit(main())
