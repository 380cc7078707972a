"""On a GPU: every experiment verified at its awkward sizes, faults caught by name while the
other experiments (and the other kernels of the same experiment) still run, earlier results
intact, and our timer against an independent one. Skipped cleanly without a GPU.

Run on the device before finishing any change to kernels, experiments or the engine:
``pytest -m gpu`` (CONTRIBUTING.md gives the device command)."""

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from labnotebook.declare.discover import experiment_folders, load
from labnotebook.build.policy import judge
from labnotebook.results import noise
from labnotebook.results.format import Provenance, Record
from labnotebook.results.rows import RunRow
from labnotebook.results.store import Store

from conftest import FAULTS, ROOT, copy_project, run_cli

pytestmark = pytest.mark.gpu
FOLDERS = experiment_folders(ROOT / "snippets")
def run(folder, **kwargs):
    """Verify (and time) an experiment in this process; no copy ceiling: these tests only verify."""
    from labnotebook.run.execute import run_experiment

    exp = load(folder)
    return exp, judge(exp, run_experiment(exp, folder, ROOT, None, log=lambda line: None, measure_ceiling=False,
                                          **kwargs))


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_experiment_verifies_at_small_and_awkward_sizes(name):
    """Every kernel runs at every edge case its launch accepts (a kernel that needs tile
    multiples says Unsupported at the others), verifies at one at least, and at every edge case
    something (a kernel or a library) verified. What the engine records as unavailable on this
    machine (a missing optional toolchain) is skipped, with its reason."""
    exp, record = run(FOLDERS[name], cases=[], large_cases=[])
    kernels = [r for r in record.rows if r.kind == "kernel"]
    unavailable = [r for r in kernels if r.unavailable]
    if unavailable and len(unavailable) == len(kernels):
        pytest.skip(f"{name}: unavailable here: {unavailable[0].error}")
    assert len(kernels) == len(exp.kernels) * len(exp.edge_cases)
    expected = {k.name for k in exp.kernels if k.expected_failure}
    for r in record.rows:
        assert r.status in ("ok", "skipped") or (r.status == "xfail" and r.name in expected), (r.name, r.case, r.error)
        assert r.status != "skipped" or r.error, f"{r.name} skipped {r.case} without saying why"
    for k in exp.kernels:
        mine = [r for r in kernels if r.name == k.name and not r.unavailable]
        assert not mine or any(r.status in ("ok", "xfail") for r in mine), f"{k.name} never verified"
    for case in exp.edge_cases:
        assert any(r.status == "ok" for r in record.rows if r.case == case.name), f"nothing verified {case.name}"
    assert record.status == "ok", record.problems


def test_a_launch_or_library_that_raises_fails_its_row_and_the_rest_still_run():
    exp, record = run(FAULTS / "snippets" / "launch_raises")
    rows = {(r.name, r.case): r for r in record.rows}
    assert rows[("1_add", "small")].status == "ok" and rows[("1_add", "small")].time
    assert rows[("numpy", "small")].status == "ok"
    bad = rows[("2_overflows", "small")]
    assert bad.status == "failed" and bad.error.startswith("launch() raised OverflowError")
    assert rows[("broken", "one")].status == "failed" and "RuntimeError: the library refused" in rows[("broken", "one")].error
    wide = rows[("3_too_wide", "small")]
    assert wide.status == "failed" and "InvalidLaunch: block (2048, 1, 1)" in wide.error, wide.error
    assert rows[("1_add", "empty")].status == "skipped" and "no blocks" in rows[("1_add", "empty")].error
    assert rows[("1_add", "one")].status == "ok"  # the context is fine after both
    assert rows[("4_shared_48k", "small")].status == "ok"  # 48 KiB dynamic + static: opted in
    assert record.status == "failed" and any("2_overflows @ small" in p for p in record.problems)


def test_kernel_skipping_the_last_element_fails_verification():
    _, record = run(FAULTS / "snippets" / "wrong_answer")
    rows = {r.case: r for r in record.rows}
    assert record.status == "failed"
    assert rows["small"].status == "failed" and rows["small"].time is None
    assert "1 of 1000 elements wrong; worst at index [999]: got nan" in rows["small"].error
    assert "worst at index [0]" in rows["one"].error


@pytest.fixture
def fault_project(tmp_path):
    """A project with one good experiment beside every broken one."""
    project = copy_project(tmp_path, sorted(p for p in (FAULTS / "snippets").iterdir() if p.is_dir()))
    good = shutil.copytree(FAULTS / "snippets" / "wrong_answer", project / "snippets" / "good_add")
    kernel = good / "1_skips_last.cu"
    kernel.write_text(kernel.read_text().replace("i < n - 1", "i < n"))
    # Earlier, good-looking results for the wrong-answer experiment must survive its failure.
    Store(project / "results").write(Record(experiment="wrong_answer", title="earlier", gpu=gpu_name(),
                                            provenance=Provenance(gpu=gpu_name(), date="2026-01-01T00:00:00+00:00"),
                                            rows=[], status="ok", source_hash="earlier"))
    return project


def gpu_name():
    from labnotebook.run.device import gpu_name_from_smi

    return gpu_name_from_smi()


def test_faults_are_named_others_still_run_and_nothing_is_lost(fault_project):
    store = Store(fault_project / "results")
    earlier = store.path("wrong_answer", gpu_name()).read_text()
    proc = run_cli(root=fault_project)
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "✗ no_compile: nvcc failed" in out and "1_typo.cu(5)" in out
    assert "✗ wrong_answer: 1_skips_last @ small: wrong answer" in out
    assert "✗ hang: timed out after 20 s" in out
    assert "✗ out_of_bounds:" in out
    assert "illegal" in store.read_failure("out_of_bounds", gpu_name()).error.lower()
    assert "✗ host_raises: 1_noop @ negative: host code inputs() raised ValueError: cannot make inputs" in out
    assert "✗ launch_raises: 2_overflows @ small: launch() raised OverflowError" in out
    assert "✗ sneaky_read: compute-sanitizer: 1_reads_past_end: memcheck:" in out
    assert "1 ran" in out and "7 failed" in out
    good = store.read("good_add", gpu_name())
    assert good.status == "ok"
    assert all(v.errors == 0 for v in good.sanitizer["1_skips_last"].values())
    assert store.path("wrong_answer", gpu_name()).read_text() == earlier
    for name in ("no_compile", "wrong_answer", "hang", "out_of_bounds", "host_raises", "sneaky_read", "launch_raises"):
        failure = store.read_failure(name, gpu_name())
        assert failure and failure.error, name
        assert str(fault_project) not in store.path(name, gpu_name(), failure=True).read_text(), "no machine paths"

    again = run_cli("--only", "good_add", root=fault_project)
    assert again.returncode == 0 and "unchanged" in again.stdout


def test_a_run_records_its_machine_code_and_a_comment_runs_nothing_again(fault_project):
    """The machine code a GPU run records is what nvcc makes of the sources anywhere; a comment
    added to the kernel leaves it, so the next build runs nothing and --rekey renews the key."""
    from labnotebook.results.freshness import CurrentKeys

    assert run_cli("--only", "good_add", "--no-sanitize", "--no-profile", root=fault_project).returncode == 0
    good = Store(fault_project / "results").read("good_add", gpu_name())
    assert good.key_rule == "meaning" and good.machine is not None
    assert good.machine.cubins == CurrentKeys(fault_project).machine("good_add", good.machine.arch).cubins
    kernel = fault_project / "snippets" / "good_add" / "1_skips_last.cu"
    kernel.write_text("// a comment, and the lines below it move\n\n" + kernel.read_text())
    again = run_cli("--only", "good_add", "--no-sanitize", "--no-profile", root=fault_project)
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stdout
    assert "rekeyed good_add" in run_cli("--rekey", root=fault_project).stdout


def test_the_fast_loop_prints_one_kernel_at_one_case_and_writes_nothing(fault_project):
    proc = run_cli("--only", "good_add", "--kernel", "1_skips_last", "--case", "small", root=fault_project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1_skips_last" in proc.stdout and "dry run" in proc.stdout
    assert not (fault_project / "results" / "good_add").exists()


@pytest.mark.parametrize("cc", ["7.5", "8.6"])
def test_older_architectures_run_here_as_their_own_gpus_would(tmp_path, cc):
    """The architecture mode as a T4 (7.5) and an RTX 3090 (8.6), for the experiments whose kernels
    need the most: each kernel's PTX for that architecture, compiled by the driver for this GPU,
    verified at every edge case, or unavailable with the reason (its ``needs:`` line, or more
    shared memory a block than the architecture gives); none failed."""
    from labnotebook.results import architectures

    project = copy_project(tmp_path, [FOLDERS["softmax"], FOLDERS["matmul_fp16"]])
    proc = run_cli("--arch", cc, root=project)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    (run,) = architectures.read_all(project / "results")
    assert run.capability == cc and not run.failed() and run.gpu == gpu_name()
    softmax, matmul = run.experiments["softmax"].kernels, run.experiments["matmul_fp16"].kernels
    for rung in ("9_cluster", "10_bulk_copy", "11_on_chip", "12_pipelined"):
        assert softmax[rung].status == "unavailable" and softmax[rung].why.endswith(f"this GPU is {cc}")
    for rung in ("4_wgmma_tma", "5_warp_specialized"):
        assert matmul[rung].why.startswith("needs compute capability 9.0 exactly (sm_90a)")
    assert softmax["1_naive"].status == softmax["6_warp_shuffle"].status == matmul["1_wmma"].status == "verified"
    assert softmax["4_atomicmax_walkthrough"].status in ("xfail", "verified")  # wrong only where a row's max is negative
    # 3 stages of 48 KiB a block: an A100's 163 KiB take them, an RTX 3090's 99 do not.
    three = matmul["3_mma_128x256"]
    if cc == "7.5":
        assert three.why.startswith("needs compute capability 8.0 or newer: cp.async copies")
    else:
        assert three.status == "unavailable" and "bytes of shared memory a block" in three.why
        assert matmul["2_mma_pipelined"].status == "verified"


@pytest.mark.parametrize("name, kernel, case", [("vec_add", "2_add_float4", "2^26"),
                                               ("vec_add_3d", "2_add_3d", "512x512x512")])
def test_engine_timing_agrees_with_triton_do_bench(name, kernel, case):
    """An independent clock on the same launch: triton.testing.do_bench's median within 5%."""
    triton_testing = pytest.importorskip("triton.testing")
    from labnotebook.run.runner import Runner

    exp = load(FOLDERS[name])
    case_ = next(c for c in exp.cases if c.name == case)
    runner = Runner(exp, FOLDERS[name], ROOT, log=lambda line: None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner.compile(Path(tmp))
        inputs = exp.inputs(case_, np.random.default_rng(0))
        buffers = {k: runner.cuda.to_device(v) for k, v in inputs.items()}
        buffers.update({k: runner.cuda.mem_alloc(next(iter(inputs.values())).nbytes) for k in exp.outputs})
        go = runner.launcher(exp.kernel(kernel), exp.kernel(kernel).launch(case_), buffers)
        ours = runner.timer.time(go).median_ms
        theirs = triton_testing.do_bench(go, warmup=25, rep=100, return_mode="median")
    finally:
        runner.close()
    assert abs(ours - theirs) / theirs < 0.05, (ours, theirs)


def test_a_flush_of_twice_the_l2_is_as_good_as_do_bench_s_256_mib():
    """Inputs that fit in L2 (24 MiB moved) time the same after the timer's flush as after
    do_bench's 256 MiB: twice the L2 is enough. (A warm L2 is no measurable help to this
    kernel on an H100: 16.6 against 15.5 us flushed, as launch and ramp-up dominate; so this
    checks the flush against do_bench's, not against none.)"""
    from labnotebook.declare.experiment import Case
    from labnotebook.run.runner import Runner
    from labnotebook.run.protocol.timing import GpuTimer

    exp = load(FOLDERS["vec_add"])
    case = Case("2^21", n=1 << 21)  # a, b and c: 8 MiB each
    runner = Runner(exp, FOLDERS["vec_add"], ROOT, log=lambda line: None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner.compile(Path(tmp))
        inputs = exp.inputs(case, np.random.default_rng(0))
        buffers = {k: runner.cuda.to_device(v) for k, v in inputs.items()}
        buffers["c"] = runner.cuda.mem_alloc(inputs["a"].nbytes)
        go = runner.launcher(exp.kernel("2_add_float4"), exp.kernel("2_add_float4").launch(case), buffers)
        ours = runner.timer.time(go)
        big = GpuTimer(runner.cuda, runner.device)
        big.flush_bytes, big.flush_buffer = 256 << 20, runner.cuda.mem_alloc(256 << 20)
        theirs = big.time(go)
    finally:
        runner.close()
    assert runner.timer.flush_bytes < 256 << 20
    # Inputs left in L2 would make ours faster, by the noise rule; a median a few percent
    # apart inside the spreads is the clock's noise (5% at 12 us, once, on an H200).
    verdict = noise.compare(noise.Spread.of(ours), noise.Spread.of(theirs)).verdict
    assert verdict != "faster", (ours, theirs)


@pytest.mark.parametrize("seed", range(12))
def test_the_gpu_check_gives_the_cpu_numbers_or_defers(seed):
    """``within_on_gpu`` proves what ``_within`` proves, with the same numbers, over outputs of
    several chunks with non-finite values, zeros and near-bound errors planted anywhere; what it
    cannot prove it leaves to the CPU (None), and never passes an output the exact check fails."""
    torch = pytest.importorskip("torch")
    from labnotebook.declare.experiment import Tolerance
    from labnotebook.run.protocol import verify

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3 * 4096))
    want = rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20)
    got = (want * (1 + rng.standard_normal(n) * 10.0 ** rng.integers(-9, -4))).astype(np.float32)
    for _ in range(int(rng.integers(0, 3))):
        i = int(rng.integers(n))
        (got if rng.random() < 0.5 else want)[i] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38])
    tol = Tolerance(atol=float(rng.choice([0.0, 1e-6])), rtol=float(rng.choice([0.0, 1e-6, 1e-4])))
    old_chunk, verify.GPU_CHUNK = verify.GPU_CHUNK, 4096  # several chunks, at a test's size
    try:
        on_gpu = verify.within_on_gpu(torch.from_numpy(got).cuda(), torch.from_numpy(want).cuda(), tol)
    finally:
        verify.GPU_CHUNK = old_chunk
    on_cpu = verify.compare(got, want, tol)
    quick = verify._within(got, want, tol)
    assert (on_gpu is None) == (quick is None)
    if on_gpu is not None:
        assert on_cpu.ok and (on_gpu.max_abs_err, on_gpu.max_rel_err, on_gpu.bound_ratio, on_gpu.elements) == \
            (on_cpu.max_abs_err, on_cpu.max_rel_err, on_cpu.bound_ratio, on_cpu.elements)


@pytest.mark.parametrize("dtype, n", [(np.float32, 1), (np.float32, 4097), (np.float16, 12_345), (np.float64, 3),
                                      (np.uint8, 77), (np.int32, 0)])
def test_the_digest_on_the_gpu_is_the_digest_on_the_host(monkeypatch, dtype, n):
    """Same bytes, same digest, wherever they lie: torch's sum on the GPU and NumPy's chunks on
    the CPU, over several chunks and a zero-padded tail."""
    torch = pytest.importorskip("torch")
    from labnotebook.run import outputs

    monkeypatch.setattr(outputs, "CHUNK", 256)
    a = (np.random.default_rng(n).standard_normal(n) * 1e4).astype(dtype)
    assert outputs.fingerprint_device(torch.from_numpy(a).cuda()) == outputs.fingerprint_host(a)
    on_gpu = outputs.Outputs(["y"], device={"y": torch.from_numpy(a).cuda()}, copy=lambda name: a)
    assert on_gpu.digest() == outputs.Outputs(["y"], host={"y": a}).digest()


def test_a_large_output_the_gpu_proves_is_never_copied_to_the_host():
    """A kernel's 2^24-element output is proved and digested where it was written; the host
    buffer is never touched. One the GPU cannot prove (a NaN planted) is copied and the CPU
    names the element."""
    pytest.importorskip("torch")
    from labnotebook.declare.experiment import Tolerance
    from labnotebook.run.device import open_context
    from labnotebook.run.case_arrays import CaseArrays
    from labnotebook.run.outputs import Outputs
    from labnotebook.run.protocol.verify import GPU_CHECK_MIN, verify_outputs, within_on_gpu

    cuda, _, context = open_context()
    try:
        x = np.random.default_rng(0).standard_normal(GPU_CHECK_MIN).astype(np.float32)
        arrays = CaseArrays(cuda, {"x": x}, {"y": np.full(GPU_CHECK_MIN, 7.0, np.float32)})
        cuda.memcpy_dtod(arrays.dev_out["y"].gpudata, arrays.dev_in["x"].gpudata, x.nbytes)  # "the kernel"
        reference = {"y": x.astype(np.float64)}
        tol = Tolerance(atol=0.0, rtol=0.0)

        def check(outputs):
            def on_gpu(name, t):
                return within_on_gpu(outputs.on_gpu(name), arrays.reference_on_gpu(reference, name), t)
            return verify_outputs(outputs, ["y"], tol, reference, {"x": x}, None, on_gpu)
        outputs = arrays.fetch("gpu", None, on_gpu=True)
        assert outputs.on_gpu("y") is not None
        assert outputs.digest() == Outputs(["y"], host={"y": x}).digest()
        assert check(outputs)[1] == "ok"
        assert (arrays.host_out["y"] == 7.0).all()  # never copied
        cuda.memset_d32(int(arrays.dev_out["y"].gpudata) + 4 * 12345, 0x7FC00000, 1)  # a NaN
        _, status, error = check(arrays.fetch("gpu", None, on_gpu=True))
        assert status == "failed" and "[12345]" in error and np.isnan(arrays.host_out["y"][12345])
        arrays.free()
    finally:
        context.pop()


@pytest.mark.parametrize("name", sorted(n for n, f in FOLDERS.items() if load(f).array_api_reference))
def test_a_reference_written_for_the_array_api_gives_the_host_s_numbers_on_the_gpu(name):
    """The same reference function on the uploaded inputs (torch, float64 on the GPU) and on the
    host (NumPy): the same values at every edge case, infinities and NaN where they are, a slice
    at a time where the experiment is row-wise."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from labnotebook.run import protocol
    from labnotebook.run.protocol.verify import reference_in_gpu_slices

    exp = load(FOLDERS[name])
    for case in exp.edge_cases:
        inputs = exp.inputs(case, protocol.case_rng(exp, case))
        on_host = exp.reference(**inputs)
        on_gpu = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in inputs.items()}
        got = reference_in_gpu_slices(on_gpu, exp.reference, chunk=4096) if exp.rowwise_reference \
            else exp.reference(**on_gpu)
        for out in exp.outputs:
            g = got[out].double().cpu().numpy()
            np.testing.assert_allclose(g, on_host[out], rtol=1e-12, atol=1e-9, equal_nan=True,
                                       err_msg=f"{name} at {case.name}: {out}")


def test_a_large_case_s_reference_is_computed_on_the_gpu_and_never_on_the_host():
    """vec_add at 2^24: every kernel and baseline verified against the reference computed on the
    GPU (the NumPy baseline's output against its copy on the host); the reference function is
    never called with host arrays."""
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    from labnotebook.run.execute import run_experiment

    exp = load(FOLDERS["vec_add"])
    called_with, reference = [], exp.reference

    def spy(**arrays):
        called_with.append(type(arrays["a"]).__module__.split(".")[0])
        return reference(**arrays)
    exp.reference = spy
    case = next(c for c in exp.cases if c.name == "2^24")
    record = judge(exp, run_experiment(exp, FOLDERS["vec_add"], ROOT, None, log=lambda line: None,
                                       measure_ceiling=False, cases=[case], edge_cases=[], large_cases=[]))
    assert record.status == "ok", record.problems
    assert {r.name for r in record.rows if r.status == "ok" and isinstance(r, RunRow) and r.check} >= \
        {"2_add_float4", "numpy", "torch"}
    assert set(called_with) == {"torch"}, called_with
