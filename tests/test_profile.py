"""Reading Nsight Compute's raw CSV report: units, launch order, NVTX ranges, stall shares."""

import re

from labnotebook.build.ncu import METRICS, STALLS, command, launches, parse, short_name
from labnotebook.run.ncu_target import RANGE

from conftest import FAULTS

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","gpu__time_duration.sum","dram__bytes.sum.per_second",'
          '"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",'
          '"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",'
          '"sm__throughput.avg.pct_of_peak_sustained_elapsed","launch__registers_per_thread",'
          '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
          '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"')
UNITS = '"","","","","","","","","","","","usecond","Tbyte/second","%","%","%","register/thread","","","",""'


def nvtx(number):
    """The NVTX cell as ncu 2025.3 prints it: the thread, then the range stack."""
    name = f"{RANGE}{number}"
    return f'541  ""<default domain>:{name}:0:none:none:RGB:0xff:REGISTERED:{name}:0"" ' if number is not None else ""


def line(i, name, us, tbs, mem, sm, stall_ls=3.0, stall_bar=1.0, number=None):
    return (f'"{i}","77","python3","host","{name}","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0",'
            f'"{us}","{tbs}","{mem}","{mem}","{sm}","32","{stall_ls}","1","{stall_bar}","{nvtx(number)}"')


def report(*rows):
    return "\n".join(["==PROF== Connected to process 77", HEADER, UNITS, *rows, "==PROF== Disconnected"])


LAUNCHED = {"ranges": {"1_add": 4, "cuBLAS": 5}, "cases": {"1_add": "2^28", "cuBLAS": "4096³", "numpy": "2^28"},
            "skipped": {"numpy": "runs on the CPU: no GPU kernel to profile"}}


def test_ranges_give_each_its_launches_and_units_become_ns_and_gbs():
    text = report(line(0, "void add<float, 4>(const float *, int)", "1,250.5", 3.1, 91.0, 12.0, number=4),
                  line(1, "void cutlass::Kernel<cutlass_80_gemm<…>>(Params)", 900, 0.5, 30.0, 81.0, 1.0, 1.0, number=5),
                  line(2, "splitKreduce_kernel(float*)", 10, 0.1, 5.0, 2.0, number=5))
    result = parse(text, LAUNCHED)
    assert result.status == "ok"
    add = result.profiles["1_add"]
    assert add.case == "2^28" and len(add.launches) == 1
    k = add.main
    assert k.function == "add<…>" and k.duration_ns == 1250500.0 and k.dram_gbs == 3100.0
    assert k.registers == 32 and k.block == "(256, 1, 1)" and k.limiter == "memory"
    assert k.dram_pct == 91.0 and k.memory_pct == 91.0 and k.sm_pct == 12.0
    assert k.stalls == {"long_scoreboard": 0.75, "barrier": 0.25}
    gemm = result.profiles["cuBLAS"]
    assert [x.function for x in gemm.launches] == ["cutlass::Kernel<…>", "splitKreduce_kernel"]
    assert gemm.main.function == "cutlass::Kernel<…>" and gemm.main.limiter == "compute"
    assert gemm.duration_ns == 910000.0
    assert result.profiles["numpy"].error.startswith("runs on the CPU") and result.profiles["numpy"].main is None


def test_a_ranges_launches_are_read_in_launch_order_whatever_order_they_are_printed_in():
    text = report(line(3, "late", 5, 0, 1, 1, number=5), line(1, "early", 5, 0, 1, 1, number=5),
                  line(2, "mid", 5, 0, 1, 1, number=4))
    assert [k.function for k in launches(text)[5]] == ["early", "late"]
    result = parse(text, LAUNCHED)
    assert result.profiles["1_add"].main.function == "mid" and result.profiles["cuBLAS"].main.function == "early"


def test_one_sessions_report_serves_each_experiment_its_own_ranges():
    text = report(line(0, "add", 5, 0, 1, 1, number=0), line(1, "gemm", 5, 0, 1, 1, number=1),
                  line(2, "outside any range", 5, 0, 1, 1))
    by_range = launches(text)
    assert sorted(by_range) == [0, 1]
    first = parse(by_range, {"ranges": {"k": 0}, "cases": {"k": "a"}, "skipped": {}})
    second = parse(by_range, {"ranges": {"k": 1}, "cases": {"k": "b"}, "skipped": {}})
    assert first.profiles["k"].main.function == "add" and second.profiles["k"].main.function == "gemm"


def test_a_report_with_no_kernel_in_any_range_fails_with_ncus_words():
    result = parse("==ERROR== Profiling failed because a driver resource was unavailable.", LAUNCHED)
    assert result.status == "failed" and "any of 2 profiled launches" in result.reason
    assert "driver resource" in result.reason
    assert parse("", {"error": "snippets/x: no such experiment"}).reason == "snippets/x: no such experiment"


def test_a_launch_ncu_saw_no_kernel_in_is_named():
    text = report(line(0, "gemm", 5, 0, 1, 1, number=5))
    assert parse(text, LAUNCHED).profiles["1_add"].error == "ncu saw no GPU kernel in its launch"


def test_a_launch_that_failed_in_its_range_is_named_and_the_next_keeps_its_own():
    launched = {**LAUNCHED, "skipped": {"1_add": "RuntimeError: refused under the profiler"}}
    text = report(line(0, "gemm", 5, 0, 1, 1, number=5))
    result = parse(text, launched)
    assert result.status == "ok" and result.profiles["1_add"].error.startswith("RuntimeError: refused")
    assert result.profiles["cuBLAS"].main.function == "gemm"


def test_names_lose_return_type_arguments_and_template_arguments():
    assert short_name("void at::native::k<4, F<float>, std::array<char*, 3> >(int, float*)") == "at::native::k<…>"
    assert short_name("softmax_rows") == "softmax_rows"


def test_the_command_profiles_the_worker_and_its_children_where_it_asks_with_ranges(tmp_path):
    cmd = command(["python3", "-m", "labnotebook.run.worker", "x"], tmp_path / "r.csv")
    assert cmd[-4:] == ["python3", "-m", "labnotebook.run.worker", "x"]
    for flag in ("--target-processes", "--profile-from-start", "--csv", "--log-file", "--nvtx"):
        assert flag in cmd
    assert cmd[cmd.index("--profile-from-start") + 1] == "off" and cmd[cmd.index("--page") + 1] == "raw"


def test_the_command_collects_exactly_the_metrics_the_report_is_read_from(tmp_path):
    cmd = command(["python3", "x.py"], tmp_path / "r.csv")
    assert "--section" not in cmd and "--set" not in cmd  # sections would collect far more, slowly
    asked = cmd[cmd.index("--metrics") + 1].split(",")
    assert asked[:-1] == list(METRICS.values()) and asked[-1] == f"regex:{STALLS}"
    for name in re.findall(r'"(smsp__[^"]+)"', HEADER):  # every stall reason ncu prints is asked for
        assert re.fullmatch(STALLS, name)
    assert not re.fullmatch(STALLS, "smsp__average_warp_latency_per_inst_issued.ratio")


def test_each_kernel_is_profiled_at_the_headline_or_its_largest_timed_case():
    import dataclasses

    from labnotebook import Case, Headline
    from labnotebook.declare.discover import load

    exp = load(FAULTS / "snippets" / "wrong_answer")
    cases = [Case("small", n=1), Case("mid", n=2), Case("big", n=3)]
    kernel = exp.kernels[0]
    exp = dataclasses.replace(exp, cases=cases, headline=Headline(case="mid", baseline="torch"))
    assert exp.profile_case(kernel.name) == "mid"
    for timed, where in ((("small", "big"), "big"), (("small",), "small")):
        slow = dataclasses.replace(exp, kernels=[dataclasses.replace(kernel, timed_cases=timed)])
        assert slow.profile_case(kernel.name) == where
    assert dataclasses.replace(exp, headline=None).profile_case(kernel.name) == "big"


def test_a_kernel_that_cannot_take_the_headline_is_profiled_at_the_largest_case_it_takes():
    """softmax's warp-per-row rung takes rows of up to 1024 columns, the headline has 8192: it
    is profiled where it ran, not left without a profile."""
    import dataclasses

    from labnotebook import Case, Headline, Unsupported
    from labnotebook.declare.discover import load
    from labnotebook.run.ncu_target import profile_case

    exp = load(FAULTS / "snippets" / "wrong_answer")
    kernel = exp.kernels[0]

    def upto(limit):
        def launch(case):
            if case.n > limit:
                raise Unsupported(f"at most {limit} elements")
            return kernel.launch(case)
        return dataclasses.replace(kernel, launch=launch)

    cases = [Case("head", n=8), Case("s1", n=1), Case("s2", n=2), Case("s4", n=4)]
    exp = dataclasses.replace(exp, cases=cases, headline=Headline(case="head", baseline="torch"))
    assert profile_case(exp, kernel.name) == "head"  # takes it: the headline, as declared
    assert profile_case(dataclasses.replace(exp, kernels=[upto(2)]), kernel.name) == "s2"
    assert profile_case(dataclasses.replace(exp, kernels=[upto(4)]), kernel.name) == "s4"
    timed = dataclasses.replace(upto(4), timed_cases=("head", "s1"))  # only where it is timed
    assert profile_case(dataclasses.replace(exp, kernels=[timed]), kernel.name) == "s1"
    # It takes no case: the headline stays, where the pass records the kernel's own reason.
    assert profile_case(dataclasses.replace(exp, kernels=[upto(0)]), kernel.name) == "head"


def test_the_memory_unit_is_the_one_ncus_memory_figure_comes_from():
    from labnotebook.results.format import KernelProfile

    # A tiled matmul: ncu's memory figure is L1's (ours is over L1's active cycles: a little higher).
    k = KernelProfile("mm", memory_pct=89.6, sm_pct=53.0, l1_pct=92.7, l2_pct=15.8, dram_pct=4.2)
    assert k.limiter == "memory" and k.memory_unit == "L1"
    # A stream: L2 counts every sector and reads higher than DRAM, but the figure is DRAM's.
    assert KernelProfile("add", memory_pct=80.6, l1_pct=23.2, l2_pct=82.7, dram_pct=80.6).memory_unit == "DRAM"
    assert KernelProfile("mma", memory_pct=90.0, l1_pct=39.0, l2_pct=90.0, dram_pct=14.8).memory_unit == "L2"
    # No unit near the figure (it comes from a unit we do not read): none is named.
    assert KernelProfile("red", memory_pct=28.7, l1_pct=23.2, l2_pct=42.3, dram_pct=9.9).memory_unit is None
    assert KernelProfile("old", memory_pct=85.0, dram_pct=85.0).memory_unit is None  # before the units
    header = HEADER.replace('"sm__throughput', '"l1tex__throughput.avg.pct_of_peak_sustained_active",'
                            '"lts__throughput.avg.pct_of_peak_sustained_elapsed","sm__throughput')
    units = UNITS.replace('"%","%","%"', '"%","%","%","%","%"', 1)
    row = line(0, "mm", 5, 0.1, 85.0, 50.0, number=4).replace('"85.0","50.0"', '"85.0","85.0","30.0","50.0"')
    text = "\n".join([header, units, row])
    k = launches(text)[4][0]
    assert (k.l1_pct, k.l2_pct, k.memory_pct, k.dram_pct) == (85.0, 30.0, 85.0, 85.0)


def test_units_as_ncu_2023_and_later_print_them():
    """ncu >= 2023 abbreviates units: --csv (base units) prints "ns" and "byte/s"; auto scaling
    prints e.g. "us" and "Gbyte/s". Older ncu printed "nsecond" and "byte/second"."""
    for time_unit, rate_unit, us, rate in (("ns", "byte/s", "1,250,500", "3,100,000,000,000"),
                                           ("us", "Gbyte/s", "1,250.5", "3,100"),
                                           ("nsecond", "byte/second", "1250500", "3.1e12")):
        units = UNITS.replace('"usecond","Tbyte/second"', f'"{time_unit}","{rate_unit}"')
        text = "\n".join(["==PROF== Connected to process 77", HEADER, units,
                          line(1, "void add<float, 4>(const float *, int)", us, rate, 91.0, 12.0, number=4),
                          line(3, "gemm", 900, 0, 30.0, 81.0, number=5)])
        k = parse(text, LAUNCHED).profiles["1_add"].main
        assert k.duration_ns == 1250500.0 and k.dram_gbs == 3100.0, (time_unit, rate_unit, k)


def test_a_unit_it_does_not_know_leaves_the_metric_out():
    units = UNITS.replace('"usecond","Tbyte/second"', '"cycle","furlong/fortnight"')
    text = "\n".join([HEADER, units, line(1, "add", 5, 5, 1, 1, number=4), line(3, "gemm", 5, 5, 1, 1, number=5)])
    k = parse(text, LAUNCHED).profiles["1_add"].main
    assert k.duration_ns is None and k.dram_gbs is None and k.registers == 32
