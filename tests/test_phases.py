"""The whole-program phase timer, on the CPU: fresh processes, verification, failure."""

import os

import numpy as np

from labnotebook.build.plan import newly_installed
from labnotebook.results.format import Check, Provenance, Record
from labnotebook.results.rows import KernelRow
from labnotebook.declare.experiment import Case, PhaseProgram, Tolerance
from labnotebook.run import phases
from labnotebook.run.phases import measure
from labnotebook.run.protocol.verify import compare

from conftest import ROOT

PROGRAM = '''
import os

def main(case, inputs, phase, cubins):
    with phase("pid"):
        pid = os.getpid()
    with phase("add"):
        c = inputs["a"] + inputs["b"] + {bug}
    return {{"c": c, "pid": __import__("numpy").array([pid])}}
'''


def run(tmp_path, bug="0", repeats=3):
    (tmp_path / "prog.py").write_text(PROGRAM.format(bug=bug))
    a, b = np.arange(5, dtype=np.float32), np.ones(5, dtype=np.float32)
    pids = []

    def verify(out):
        pids.append(int(out["pid"][0]))
        check = compare(out["c"], (a + b).astype(np.float64), Tolerance(0, 0))
        return Check(**check.as_record(), atol=0, rtol=0), "ok" if check.ok else "failed"

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    base = {"case": "5", "params": {"n": 5}, "timed": True, "bytes": None, "flops": None}
    rows = measure(PhaseProgram("prog.py", cases=("5",), repeats=repeats), tmp_path, Case("5", n=5),
                   {"a": a, "b": b}, tmp_path, verify, env, base)
    return rows, pids


def test_each_repeat_is_a_fresh_verified_process(tmp_path):
    rows, pids = run(tmp_path)
    assert [r.name for r in rows] == ["pid", "add"]
    assert len(set(pids)) == 3 and os.getpid() not in pids
    assert all(r.status == "ok" and r.time.reps == 3 and r.kind == "phase" for r in rows)


def test_fresh_processes_stop_at_the_least_once_the_budget_is_spent(tmp_path, monkeypatch):
    monkeypatch.setattr(phases, "LEAST_PROCESSES", 2)
    monkeypatch.setattr(phases, "BUDGET_S", 0.0)
    rows, pids = run(tmp_path, repeats=4)
    assert len(pids) == 2 and all(r.time.reps == 2 and r.fresh_processes == 2 for r in rows)
    monkeypatch.setattr(phases, "BUDGET_S", 1e9)
    rows, pids = run(tmp_path, repeats=4)
    assert len(pids) == 4 and all(r.time.reps == 4 for r in rows)


def test_a_wrong_answer_fails_every_phase(tmp_path):
    rows, _ = run(tmp_path, bug="1")
    assert all(r.status == "failed" and r.time is None for r in rows)


def test_a_crashing_program_is_one_failed_row(tmp_path):
    rows, _ = run(tmp_path, bug="undefined_name")
    assert len(rows) == 1 and rows[0].status == "failed" and "NameError" in rows[0].error


def test_a_module_missing_then_installed_triggers_a_rerun():
    rows = [KernelRow(name=f"k{i}", case="1", params={}, status="skipped", timed=True, unavailable=True,
                      missing_module=m) for i, m in enumerate(["numpy", "no_such_module_anywhere"])]
    record = Record(experiment="x", title="x", gpu="g", provenance=Provenance(gpu="g", date="d"), rows=rows,
                    status="ok")
    assert newly_installed(record) == ["numpy"]
