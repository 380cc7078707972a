#!/usr/bin/env python3
"""Run the notebook's experiments on this GPU and freeze their results into results/.

    python build_results.py            # run what changed since its results were recorded
    python build_results.py --list     # experiments and the state of their results
    python build_results.py --summary  # every stored result as JSON lines (no GPU needed)
"""
import sys

from labnotebook.build.cli import main

if __name__ == "__main__":
    sys.exit(main())
