"""The CUDA compile cache (host-sdk/cuda/cache.ts): encoded bundles on disk
under a content hash of everything that decides nvcc's output (its version,
arch, flags, source, function table).

The key is computed exactly as the TypeScript computes it and the entries
are the same files, so the Python and TypeScript SDKs share one cache: a
kernel compiled from either is a hit for the other. Entries are written to
a temporary file and renamed, so a reader never sees half a file; a bad
entry is the caller's to ignore.
"""
from __future__ import annotations

import hashlib
import os
import secrets
from typing import Any, Mapping, Optional

from ._compile_js import canonical_json

#: Bumped (in cache.ts and here together) whenever what is cached, or how the key is made, changes.
CACHE_FORMAT = 1


def default_cache_dir() -> str:
    """$KFARM_CACHE_DIR, else $XDG_CACHE_HOME/kernelfarm/cuda, else ~/.cache/kernelfarm/cuda (read at each call)."""
    if os.environ.get("KFARM_CACHE_DIR"):
        return os.environ["KFARM_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "kernelfarm", "cuda")
    return os.path.join(os.path.expanduser("~"), ".cache", "kernelfarm", "cuda")


def cache_key(parts: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON of `parts` plus CACHE_FORMAT: records with sorted keys, so key order never matters."""
    return hashlib.sha256(canonical_json({"cacheFormat": CACHE_FORMAT, **parts}).encode("utf-8")).hexdigest()


def cache_entry_path(directory: str, key: str) -> str:
    return os.path.join(directory, f"{key}.kfm")


def read_cache_entry(directory: str, key: str) -> Optional[bytes]:
    """The entry's bytes, or None when there is none (or it cannot be read)."""
    try:
        with open(cache_entry_path(directory, key), "rb") as f:
            return f.read()
    except OSError:
        return None


def write_cache_entry(directory: str, key: str, data: bytes) -> None:
    """Stores `data` as the entry for `key`: written beside it, then renamed over it."""
    os.makedirs(directory, exist_ok=True)
    final = cache_entry_path(directory, key)
    temp = f"{final}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    try:
        with open(temp, "wb") as f:
            f.write(data)
        os.replace(temp, final)
    except BaseException:
        try:
            os.remove(temp)
        except FileNotFoundError:
            pass
        raise
