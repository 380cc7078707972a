"""``build_results.py --check``: what is not fresh, why, and the command that fixes it. No GPU,
no PyCUDA: it reads the committed results and hashes the sources, so CI runs it.

A result on the reference GPU (``settings.gpu``) that is stale, failed, missing or unreadable is
an error, and the check exits 1; so is the large pass's, for an experiment that has one (its cases
of 2^31 elements and more, run by ``build_results.py --large``). Elsewhere a stale or missing result is a warning (the pages show
it as such), a failed or unreadable one still an error. A draft entry's results are never
required: a draft with no results yet is a note, its other findings are warnings wherever they
are. A profile that is not fresh is a warning: it is evidence beside the numbers, never a reason
to distrust them. An experiment whose declaration does not load is an error of its own, named
once, draft or not: nothing can be run or shown for it until it loads. A fresh result whose key
is not written as a run would write it now (fresh by its machine code though a CUDA file changed,
or keyed by an older rule) is a warning whose fix needs no GPU: ``build_results.py --rekey``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .. import settings
from .format import PASSES
from .freshness import CurrentKeys, Stored, run_command
from .store import CEILINGS, Store

REKEY = "python build_results.py --rekey"


@dataclass(frozen=True)
class Finding:
    level: Literal["error", "warning", "note"]
    experiment: str
    gpu: str  # empty where the finding is the experiment's own, on no GPU in particular
    what: str  # "stale", "failed", "missing", "corrupt", or "profile stale" and the like
    why: str  # which files changed, why the run failed, ...
    fix: str  # the command that fixes it, and where to run it

    def line(self) -> str:
        mark = {"error": "✗", "warning": "!", "note": "·"}[self.level]
        return f"{mark} {self.text}"

    @property
    def text(self) -> str:
        """The line without its mark, as a build error shows it."""
        where = f"{self.experiment} on {self.gpu}" if self.gpu else self.experiment
        return f"{where}: {self.what}: {self.why}; fix: {self.fix}"


def command(stored: Stored) -> str:
    """What re-makes a result, or its profile alone (where the results stand), and on which GPU."""
    return f"on an {stored.gpu}: `{stored.command}`"


def findings(root: Path, store: Store) -> list[Finding]:
    config, keys, drafts = settings.read(root), CurrentKeys(root), settings.drafts(root)
    gpus = list(dict.fromkeys([config.gpu, *config.gpus,
                               *(g for name in keys.names() for g in store.gpus(name, failures=True))]))
    out = []
    for name in keys.names():
        if keys[name].error:
            out.append(load_error(name, keys[name].error))
            continue  # its results, on every GPU, would only repeat that
        for gpu, part in ((g, p) for g in gpus for p in keys[name].parts):
            stored = Stored.read(store, name, gpu, keys, part)
            state = stored.state
            required = gpu == config.gpu and name not in drafts
            if state != "fresh":
                if state == "missing" and gpu not in config.gpus:
                    continue  # a GPU the pages do not show, with results for other experiments only
                error = required or state in ("failed", "corrupt") and name not in drafts
                level = "error" if error else "note" if name in drafts and state == "missing" else "warning"
                what = "draft, not yet run" if level == "note" else state
                if part != "main":
                    what = f"{part} pass {what}"
                out.append(Finding(level, name, gpu, what, stored.reason(), command(stored)))
            elif stored.rekey_due:
                out.append(Finding("warning", name, gpu, "fresh, key not current" if part == "main"
                                   else f"{part} pass fresh, key not current", stored.rekey_reason(),
                                   f"`{REKEY}` (no GPU; CI never writes)"))
            if state == "fresh" and name != CEILINGS and PASSES[part].profiled and stored.profile_state != "fresh":
                profile = stored.record.profile
                reason = (profile.reason if profile and profile.reason else
                          "none on record" if profile is None else "the profiler pass changed since")
                out.append(Finding("warning", name, gpu, f"profile {stored.profile_state}", reason,
                                   command(stored)))
    return out


def load_error(name: str, error: str) -> Finding:
    """The finding for an experiment whose ``experiment.py`` raises, or declares what is not there."""
    return Finding("error", name, "", "its declaration does not load", error.removeprefix(f"{name}: "),
                   f"edit snippets/{name}/ (`pytest tests/test_experiments.py` checks a declaration, no GPU needed)")
