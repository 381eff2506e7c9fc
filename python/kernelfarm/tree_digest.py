"""The tree digest of bytes (domain/tree-digest.ts): what `upload(..., dedupe=True)`
names bytes by. Each 1 MiB leaf is hashed on its own, on a thread pool
(hashlib releases the GIL for large buffers), then one sha256 over a tag, the
size and the leaves' digests makes the file's:

    sha256(b"kfarm-tree-sha256-v1\\0" + size as 8 bytes little-endian + sha256(leaf 0) + sha256(leaf 1) + ...)
"""
from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from ._contract import TREE_LEAF_BYTES

_TAG = b"kfarm-tree-sha256-v1\0"
_pool: Optional[ThreadPoolExecutor] = None


def _leaf(view: memoryview) -> bytes:
    return hashlib.sha256(view).digest()


def tree_digest(data: bytes | bytearray | memoryview) -> str:
    """The tree digest of `data`, as hex; leaves hashed in parallel when there are several."""
    global _pool
    view = memoryview(data).cast("B")
    leaves = [view[at : at + TREE_LEAF_BYTES] for at in range(0, len(view), TREE_LEAF_BYTES)]
    if len(leaves) > 1:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1), thread_name_prefix="kfarm-tree-digest")
        digests = list(_pool.map(_leaf, leaves))
    else:
        digests = [_leaf(x) for x in leaves]
    root = hashlib.sha256(_TAG + len(view).to_bytes(8, "little"))
    for d in digests:
        root.update(d)
    return root.hexdigest()
