"""Merge the results folders that several machines refreshed into one, for one pull request.

Each machine (one per GPU model) uploads its whole ``results/`` folder: its own GPU's files, new,
plus the committed files of every other GPU, as they were checked out. The merge copies into
``into`` (the checkout's ``results/``) every results file that differs from the copy there,
keeping the folder layout::

    python -m labnotebook.results.merge incoming/* --into results

It is all-or-nothing: every file is checked first (it must parse, and no two trees may change the
same file differently: two machines of one GPU model both refreshed it, and which to keep is
ambiguous), and nothing is written if one check fails. It never deletes a file of ``into``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import ResultsError
from .store import read_json

# <experiment>/<gpu>[.large][.failure].json, ceilings/<gpu>.json and architectures/<sm_XY>.json:
# every results file lies one folder down.
PATTERN = "*/*.json"


def merge(trees: list[Path], into: Path) -> list[Path]:
    """Copy the results files of ``trees`` into ``into``; the paths written, sorted."""
    plan: dict[Path, tuple[Path, bytes]] = {}  # relative path -> (the tree it comes from, its bytes)
    for tree in trees:
        if not tree.is_dir():
            raise ResultsError(f"{tree.as_posix()} is not a folder of results")
        for src in sorted(tree.glob(PATTERN)):
            rel = src.relative_to(tree)
            if any(part.startswith(".") for part in rel.parts):  # a temporary file, not a result
                continue
            read_json(src)  # a corrupt file is refused, with its path
            data = src.read_bytes()
            old = into / rel
            # What ``into`` already holds is no change, whichever tree carries it: every machine
            # uploads the other GPUs' committed files untouched.
            if old.is_file() and old.read_bytes() == data:
                continue
            if rel in plan and plan[rel][1] != data:
                raise ResultsError(
                    f"{plan[rel][0].as_posix()} and {tree.as_posix()} both carry {rel.as_posix()}, with different "
                    f"contents: two machines of the same GPU model refreshed it; merge the trees of one of them")
            plan[rel] = (tree, data)
    written = []
    for rel, (_, data) in sorted(plan.items()):
        target = into / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        # Replaced whole, as the store writes: a merge killed midway leaves no half-written file.
        tmp = target.with_name(f".{target.name}.merge.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labnotebook.results.merge",
                                     description="Merge results folders refreshed on several machines.")
    parser.add_argument("trees", nargs="+", type=Path, metavar="TREE", help="a results folder to merge from")
    parser.add_argument("--into", required=True, type=Path, metavar="DIR", help="the results folder to merge into")
    args = parser.parse_args(argv)
    try:
        written = merge(args.trees, args.into)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path in written:
        print(path.relative_to(args.into).as_posix())
    return 0


if __name__ == "__main__":
    sys.exit(main())
