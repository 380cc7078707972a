"""Where a run's wall time goes, by phase (``format.REFRESH_PHASES``)."""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager


class Clock:
    """Where a run's wall time goes, by phase: ``with clock("verify"):``. A phase entered inside
    another stops the outer one's clock until it is left, so every second is counted once."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[str] = []
        self._since = time.perf_counter()

    @contextmanager
    def __call__(self, phase: str):
        self._switch()
        self._stack.append(phase)
        try:
            yield
        finally:
            self._switch()
            self._stack.pop()

    def _switch(self) -> None:
        now = time.perf_counter()
        if self._stack:
            self.seconds[self._stack[-1]] += now - self._since
        self._since = now

    def rounded(self) -> dict[str, float]:
        return {phase: round(s, 2) for phase, s in self.seconds.items()}
