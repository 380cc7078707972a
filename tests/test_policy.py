"""The failure policy: expected failures must fail, failed rows fail the run, sanitizer findings count."""

import dataclasses

import numpy as np

from labnotebook import Experiment, Kernel, Launch, Tolerance
from labnotebook.build.policy import judge, sanitizer_findings
from labnotebook.results.format import Provenance, Record, Verdict
from labnotebook.results.rows import KernelRow


def experiment(expected=None):
    launch = lambda case: Launch((1,), (32,), ())  # noqa: E731
    return Experiment(title="t", kernels=[Kernel("1_a.cu", "a", launch), Kernel("2_b.cu", "b", launch,
                                                                                expected_failure=expected)],
                      cases=[], inputs=lambda c, r: {}, reference=lambda: {}, outputs={"c": np.float32},
                      tolerance=Tolerance(0, 0))


def record(*statuses):
    rows = [KernelRow(name=name, case=f"c{i}", params={}, status=s, timed=True,
                      error="wrong answer" if s == "failed" else None)
            for i, s in enumerate(statuses) for name in ("1_a", "2_b")]
    return Record(experiment="t", title="t", gpu="g", provenance=Provenance(gpu="g", date="d"), rows=rows,
                  status="ok")


def test_a_failed_row_fails_the_run_naming_kernel_and_case():
    r = judge(experiment(), record("ok", "failed"))
    assert r.status == "failed" and r.problems[0] == "1_a @ c1: wrong answer"


def test_an_expected_failure_that_fails_is_xfail_and_the_run_passes():
    r = record("ok")
    r.rows[1] = dataclasses.replace(r.rows[1], status="failed")
    judged = judge(experiment("by design"), r)
    assert judged.status == "ok" and judged.rows[1].status == "xfail"


def test_an_expected_failure_that_passes_everywhere_fails_the_run():
    r = judge(experiment("by design"), record("ok", "ok"))
    assert r.status == "failed" and "declared to fail (by design) but passed every case" in r.problems[0]


def test_sanitizer_findings_skip_expected_failures_and_count_unfinished_tools():
    report = {"1_a": {"memcheck": Verdict(0), "racecheck": Verdict(None, "timed out")},
              "2_b": {"memcheck": Verdict(3, "Invalid __global__ read")}}
    assert sanitizer_findings(experiment("by design"), report) == ["1_a: racecheck: unfinished errors: timed out"]
    assert len(sanitizer_findings(experiment(), report)) == 2
