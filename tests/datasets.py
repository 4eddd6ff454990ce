"""A dataset of given journals for the fleet's tests: copied into `root/j` (a folder of
their own, as a user's would be) and collected into `root/ds`."""

from __future__ import annotations

import shutil
from pathlib import Path


def collected(root: Path, *journals: Path) -> Path:
    """`root`, holding `j` (the journals' copies) and `ds` (their dataset)."""
    from agent_profiler.dataset.collect import collect

    (root / "j").mkdir(parents=True)
    for journal in journals:
        shutil.copy(journal, root / "j")
    collect([root / "j"], root / "ds")
    return root
