"""The host scripts of README.md's Python section and python/README.md run as
written (with the test farm's address and a compiled vadd module), so the
docs stay true to the SDK."""
from __future__ import annotations

import re

import pytest

from farm import REPO

DOCS = [REPO / "README.md", REPO / "python" / "README.md"]


def host_script(path) -> str:
    """The first Python block that connects to a tracker."""
    for block in re.findall(r"```python\n(.*?)```", path.read_text(), re.S):
        if "connect_tracker(" in block:
            return block
    raise AssertionError(f"{path} has no host script")


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_the_host_script_runs_as_written(doc, farm, tracker, vadd_module, capsys):
    code = host_script(doc).replace('"127.0.0.1:9190"', repr(farm.address))
    exec(compile(code, str(doc), "exec"), {"module": vadd_module})
    out = capsys.readouterr().out
    assert "[3. 3. 3." in out and "Execution time summary:" in out
