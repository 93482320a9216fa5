#!/usr/bin/env python3
"""Copies the named kernel modules and every module they depend on (the `depends=` of each
module's .modinfo) from a module tree into another, decompressed, and writes the load order to
DEST/load-order. A name not found as a module is taken to be built in.
    modules.py SRC_TREE DEST_TREE NAME..."""
import lzma
import os
import subprocess
import sys

src, dest, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]


def norm(name):
    return name.replace("-", "_")


files = {}
for root, _, names in os.walk(os.path.join(src, "kernel")):
    for n in names:
        for ext in (".ko", ".ko.xz", ".ko.zst"):
            if n.endswith(ext):
                files[norm(n[: -len(ext)])] = os.path.join(root, n)


def read(path):
    if path.endswith(".xz"):
        return lzma.open(path).read()
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-q", "-d", "-c", path], check=True,
                              capture_output=True).stdout
    with open(path, "rb") as f:
        return f.read()


order, seen = [], set()


def visit(name):
    name = norm(name)
    if name in seen or name not in files:
        return
    seen.add(name)
    data = read(files[name])
    at = data.find(b"\0depends=")
    deps = data[at + 9: data.find(b"\0", at + 9)].decode() if at >= 0 else ""
    for d in filter(None, deps.split(",")):
        visit(d)
    rel = os.path.relpath(files[name], src)
    for ext in (".xz", ".zst"):
        if rel.endswith(ext):
            rel = rel[: -len(ext)]
    out = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)
    order.append(rel)


for w in wanted:
    visit(w)
with open(os.path.join(dest, "load-order"), "w") as f:
    f.write("\n".join(order) + "\n")
