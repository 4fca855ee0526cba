"""scripts/mutation_report.py: the kill rate per module, equivalents taken out by name, stale ones reported."""

import json
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def report():
    return runpy.run_path(str(REPO / "scripts" / "mutation_report.py"))


def _meta(folder: Path, relative: str, codes: dict) -> None:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes}))


def test_rates_count_timeouts_as_killed_and_leave_out_unrun_and_listed_equivalent_mutants(tmp_path, report, capsys):
    mutants = tmp_path / "mutants"
    _meta(
        mutants,
        "specsim/serving/simulator.py.meta",
        {
            "specsim.serving.x_a__mutmut_1": 1,
            "specsim.serving.x_a__mutmut_2": 36,
            "specsim.serving.x_a__mutmut_3": 0,
            "specsim.serving.xǁEǁf__mutmut_1": 0,
            "specsim.serving.x_a__mutmut_4": None,
            "specsim.serving.x_a__mutmut_5": 33,
        },
    )
    _meta(
        mutants,
        "specsim/timing/kernels.py.meta",
        {"specsim.timing.kernels.x_b__mutmut_1": 1, "specsim.timing.kernels.x_b__mutmut_2": 1},
    )
    equivalents = tmp_path / "eq.txt"
    equivalents.write_text(
        "# comment\nspecsim.serving.xǁEǁf__mutmut_1 dtype only\nspecsim.timing.kernels.x_b__mutmut_2 wrong\n"
        "specsim.serving.x_gone__mutmut_9 renamed since\n"
    )
    assert report["main"]([str(mutants), "--equivalents", str(equivalents), "--survivors"]) == 0
    out = capsys.readouterr().out
    # serving: 6 mutants, 5 run (one not checked), 2 killed (a timeout is a kill), 1 equivalent, 2 survived
    # (one with no test reaching it): 2 / (5 - 1) = 50%.
    assert "| serving | 6 | 5 (0) | 2 | 2 | 1 | 50.0% | - (1 not run) |" in out
    assert "| timing.kernels | 2 | 2 (0) | 2 | 0 | 0 | 100.0% | 100.0% (all run) |" in out
    assert "warning: specsim.timing.kernels.x_b__mutmut_2 is listed as equivalent but a test kills it" in out
    assert "warning: specsim.serving.x_gone__mutmut_9 is listed as equivalent but is not a mutant of this run" in out
    assert (
        "survivor: specsim.serving.x_a__mutmut_3 (survived)" in out
        and "survivor: specsim.serving.x_a__mutmut_5 (no tests)" in out
    )
    assert "xǁEǁf__mutmut_1 (survived)" not in out


def test_an_equivalent_without_a_reason_and_a_missing_folder_are_refused(tmp_path, report, capsys):
    bad = tmp_path / "eq.txt"
    bad.write_text("specsim.serving.x_a__mutmut_1\n")
    with pytest.raises(SystemExit, match="eq.txt:1: an equivalent mutant needs its reason after the name"):
        report["read_equivalents"](bad)
    assert report["main"]([str(tmp_path / "nothing")]) == 2
    assert "is not a folder; run `mutmut run` first" in capsys.readouterr().err


def test_the_shipped_equivalents_list_names_only_mutants_of_the_configured_modules_with_a_reason(report):
    listed = report["read_equivalents"](REPO / "tests" / "mutation_equivalents.txt")
    import fnmatch
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]
    for name in listed:
        # A module is its file or its package's __init__.py (specsim.engines: specsim/engines/__init__.py), matched
        # against only_mutate's globs as mutmut matches them.
        path = report["module_of"](name).replace(".", "/")
        files = (path + ".py", path + "/__init__.py")
        assert any(fnmatch.fnmatch(f, pattern) for f in files for pattern in config), name


def test_fresh_reruns_each_named_survivor_in_a_new_process_and_records_its_verdict(tmp_path, report, capsys):
    # The test sees the mutant it is run under only through the environment, as mutmut's trampoline does at import.
    mutants = tmp_path / "mutants"
    _meta(
        mutants,
        "pkg/m.py.meta",
        {"pkg.m.x_f__mutmut_1": 0, "pkg.m.x_f__mutmut_2": 0, "pkg.m.x_g__mutmut_1": 0, "pkg.m.x_f__mutmut_3": 1},
    )
    (mutants / "test_m.py").write_text(
        "import os\n\ndef test_m():\n    assert os.environ.get('MUTANT_UNDER_TEST') != 'pkg.m.x_f__mutmut_1'\n"
    )
    assert report["main"]([str(mutants), "--fresh", "pkg.m.x_f__", "--tests", "test_m.py"]) == 0
    out = capsys.readouterr().out
    assert "fresh: pkg.m.x_f__mutmut_1: killed" in out and "fresh: pkg.m.x_f__mutmut_2: survived" in out
    assert "x_g__" not in out.split("| module")[0] and "x_f__mutmut_3" not in out  # other prefixes, killed ones: left
    codes = json.loads((mutants / "pkg/m.py.meta").read_text())["exit_code_by_key"]
    assert codes == {
        "pkg.m.x_f__mutmut_1": 1,
        "pkg.m.x_f__mutmut_2": 0,
        "pkg.m.x_g__mutmut_1": 0,
        "pkg.m.x_f__mutmut_3": 1,
    }
    assert report["main"]([str(mutants), "--fresh", "pkg.m.x_f__"]) == 2
    assert "--fresh needs --tests" in capsys.readouterr().err


def test_a_sampled_remainder_scales_to_the_whole_module_with_its_wilson_interval(report):
    # 10 mutants: the first 4 run (3 killed, 1 equivalent); of the 6 left, 2 drawn at random: 1 killed, 1 survived.
    names = [f"specsim.serving.x_f__mutmut_{i}" for i in range(10)]
    results = dict(zip(names, ["killed", "killed", "killed", "survived", "killed", "survived"] + ["not checked"] * 4))
    table, problems = report["report"](results, {names[3]: "dtype"}, frozenset(names[4:6]))
    row = table[0]
    assert problems == [] and (row["run"], row["sampled"], row["killed"], row["equivalent"]) == (6, 2, 4, 1)
    # First part 3 of 3 judged; the 6 left would hold 6 * 1/2 killed of 6 * 2/2 judged: (3 + 3) / (3 + 6).
    assert row["estimate"][0] == pytest.approx(6 / 9)
    low, high = report["wilson"](1, 2)
    assert row["estimate"][1:] == pytest.approx(((3 + 6 * low) / 9, (3 + 6 * high) / 9))
    assert 0 < low < 0.5 < high < 1 and report["wilson"](0, 0) == (0.0, 1.0)


def test_only_counts_the_mutants_of_the_functions_a_run_was_restricted_to(tmp_path, report, capsys):
    # A run restricted to some functions (mutmut run PATTERN ...): the rest of the module is neither "not run" nor a
    # stale equivalent.
    mutants = tmp_path / "mutants"
    _meta(
        mutants,
        "specsim/serving/counters.py.meta",
        {
            "specsim.serving.counters.xǁCǁat__mutmut_1": 1,
            "specsim.serving.counters.xǁCǁat__mutmut_2": 0,
            "specsim.serving.counters.xǁCǁat__mutmut_3": 0,
            "specsim.serving.counters.x_other__mutmut_1": None,
        },
    )
    equivalents = tmp_path / "eq.txt"
    equivalents.write_text(
        "specsim.serving.counters.xǁCǁat__mutmut_3 why\nspecsim.serving.counters.x_other__mutmut_7 not selected\n"
    )
    only = tmp_path / "only.txt"
    only.write_text("# the moved functions\nspecsim.serving.counters.xǁCǁat__mutmut_*  # all of at\n")
    assert report["main"]([str(mutants), "--equivalents", str(equivalents), "--only", str(only), "--survivors"]) == 0
    out = capsys.readouterr().out
    assert "| serving.counters | 3 | 3 (0) | 1 | 1 | 1 | 50.0% | 50.0% (all run) |" in out
    assert "warning" not in out and "x_other" not in out
    assert "survivor: specsim.serving.counters.xǁCǁat__mutmut_2 (survived)" in out
