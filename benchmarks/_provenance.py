"""Which code a validation run measured: the git commit and a digest of the source files it imported."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path


def source_state(files: list[Path], label: str) -> str:
    """``commit abc1234[ with uncommitted changes]; sha256 of LABEL <digest>`` for ``files``."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + path.read_bytes())
    folder = str(files[0].parent)
    try:
        git = ["git", "-C", folder]
        commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            git + ["status", "--porcelain", "--", *map(str, files)], capture_output=True, text=True, check=True
        )
        where = f"commit {commit.stdout.strip()}" + (" with uncommitted changes" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        where = "no git information"
    return f"{where}; sha256 of {label} {digest.hexdigest()[:12]}"
