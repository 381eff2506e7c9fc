"""The Python SDK's tree digest equals the TypeScript one (domain/tree-digest.spec.ts pins the same values)."""
from __future__ import annotations

from kernelfarm.tree_digest import TREE_LEAF_BYTES, tree_digest


def test_the_tree_digest_is_the_typescript_one():
    assert tree_digest(b"") == "baafd6012f33e25a690f26b9a8859517f8f99a5f4eb6ee1c9d11d09450e5c716"
    pattern = bytes((i * 131 + 7) & 0xFF for i in range(3 * TREE_LEAF_BYTES + 777))
    assert tree_digest(pattern) == "47795da2b80146eebcb997741670ea008bcb922ad639d13853c65587cf2602c7"
    assert tree_digest(memoryview(pattern)[:TREE_LEAF_BYTES]) != tree_digest(pattern[: TREE_LEAF_BYTES - 1])
