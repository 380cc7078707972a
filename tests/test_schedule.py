"""The scheduler over a node's GPUs, with stand-in jobs that sleep instead of running workers."""

import threading
import time

import pytest

from labnotebook.build.schedule import Job, Scheduler


class Clock:
    """Records when each stand-in job ran, and where."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spans: list[tuple[str, int, bool, float, float]] = []
        self.t0 = time.perf_counter()

    def job(self, label, seconds, timed=True, gpu=None, then=None, estimate=None):
        def run(g):
            start = time.perf_counter() - self.t0
            time.sleep(seconds)
            with self.lock:
                self.spans.append((label, g, timed, start, time.perf_counter() - self.t0))
            return label
        return Job(label, run, timed=timed, gpu=gpu, then=then, estimate_s=seconds if estimate is None else estimate)

    def overlapping(self, a, b) -> bool:
        return a[3] < b[4] - 1e-4 and b[3] < a[4] - 1e-4


def check_rules(clock: Clock, slots: int):
    """No timed job shares its GPU; at no moment do more than ``slots`` untimed jobs share one."""
    for a in clock.spans:
        together = [b for b in clock.spans if b is not a and b[1] == a[1] and clock.overlapping(a, b)]
        if a[2]:
            assert not together, f"{a[0]} shared GPU {a[1]} with {[b[0] for b in together]}"
        else:
            at_start = [b for b in clock.spans if b[1] == a[1] and not b[2] and b[3] <= a[3] + 1e-4 < b[4]]
            assert len(at_start) <= slots, f"{len(at_start)} untimed jobs at once on GPU {a[1]}"


def test_timed_jobs_never_share_a_gpu_and_spread_over_every_gpu():
    clock = Clock()
    jobs = [clock.job(f"exp{i}", 0.05 + 0.01 * (i % 3)) for i in range(8)]
    Scheduler([0, 1, 2, 3]).run(jobs)
    assert len(clock.spans) == 8
    check_rules(clock, slots=4)
    assert {s[1] for s in clock.spans} == {0, 1, 2, 3}
    assert max(s[4] for s in clock.spans) < 0.8 * sum(s[4] - s[3] for s in clock.spans)  # ran side by side


def test_untimed_follow_ups_share_a_gpu_but_never_with_a_timed_run():
    clock = Clock()

    def sanitize(result):
        return [clock.job(f"{result}:{tool}", 0.04, timed=False) for tool in ("memcheck", "racecheck", "synccheck")]
    jobs = [clock.job(f"exp{i}", 0.05, then=sanitize) for i in range(4)]
    Scheduler([0], shared_slots=2).run(jobs)
    assert len(clock.spans) == 4 + 12
    check_rules(clock, slots=2)
    untimed = [s for s in clock.spans if not s[2]]
    assert any(clock.overlapping(a, b) for a in untimed for b in untimed if a is not b), "untimed jobs may share"


def test_pinned_jobs_run_first_on_their_gpu_and_longest_jobs_start_first():
    clock = Clock()
    jobs = [clock.job("short", 0.01), clock.job("long", 0.08), clock.job("ceiling 1", 0.01, gpu=1),
            clock.job("ceiling 0", 0.01, gpu=0)]
    Scheduler([0, 1]).run(jobs)
    first = {g: min((s for s in clock.spans if s[1] == g), key=lambda s: s[3])[0] for g in (0, 1)}
    assert first == {0: "ceiling 0", 1: "ceiling 1"}
    starts = {s[0]: s[3] for s in clock.spans}
    assert starts["long"] <= starts["short"]


def test_a_job_that_raises_is_handed_to_its_follow_up_and_the_rest_still_run():
    clock, seen = Clock(), []

    def boom(g):
        raise RuntimeError("worker exploded")

    jobs = [Job("bad", boom, then=lambda r: seen.append(r) or []), clock.job("good", 0.01)]
    Scheduler([0]).run(jobs)
    assert isinstance(seen[0], RuntimeError) and [s[0] for s in clock.spans] == ["good"]


def test_a_job_pinned_to_a_gpu_that_is_not_there_is_refused():
    with pytest.raises(ValueError, match="pinned to GPU 3"):
        Scheduler([0]).run([Job("x", lambda g: None, gpu=3)])


def test_each_gpu_gets_its_own_share_of_the_cores(monkeypatch):
    from labnotebook.build import workers

    monkeypatch.setattr(workers.draw, "cores", lambda: list(range(64)))
    shares = workers.share_cores([1, 2, 3])
    assert [len(v) for v in shares.values()] == [21, 21, 21]
    assert not set(shares[1]) & set(shares[2]) and not set(shares[2]) & set(shares[3])
    env = workers.worker_env(2, shares[2])
    assert env["CUDA_VISIBLE_DEVICES"] == "2" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["NOTEBOOK_CPUS"].split(",")[0] == str(shares[2][0])


def test_an_experiment_is_finished_before_the_next_one_starts():
    """Its sanitizer passes and its profile go before another experiment's run, so that a build
    stopped part-way keeps every experiment it got through."""
    clock = Clock()

    def follow_ups(result):
        return ([clock.job(f"{result}:{tool}", 0.02, timed=False) for tool in ("memcheck", "racecheck")]
                + [clock.job(f"{result}:profile", 0.02)])
    jobs = [clock.job(f"exp{i}", 0.03 + 0.01 * i, then=follow_ups) for i in range(3)]
    Scheduler([0], shared_slots=2).run(jobs)
    order = [s[0] for s in sorted(clock.spans, key=lambda s: s[3])]
    starts = [order.index(f"exp{i}") for i in (2, 1, 0)]  # longest first
    for before, after in zip(starts, starts[1:]):
        name = order[before]
        assert all(order.index(f"{name}:{t}") < after for t in ("memcheck", "racecheck", "profile")), order
    check_rules(clock, slots=2)


def test_each_job_done_says_how_long_it_took():
    clock, events = Clock(), []
    Scheduler([0], on_event=events.append).run([clock.job("exp: timed run", 0.2)])
    done = next(e for e in events if "done" in e)
    assert done.startswith("GPU 0: done  exp: timed run (") and done.endswith(" s)")
    assert 0.2 <= float(done.split("(")[1].split()[0]) < 1.0
