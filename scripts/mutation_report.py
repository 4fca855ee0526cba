"""Kill rate per module of a mutmut run, with the equivalent mutants listed by name taken out.

    python scripts/mutation_report.py [MUTANTS_DIR] [--equivalents FILE] [--survivors] [--sample FILE] [--only FILE]
    python scripts/mutation_report.py [MUTANTS_DIR] --fresh PREFIX --tests TEST [TEST ...]

Reads mutmut's own result files (``mutants/**/*.py.meta``, mutmut 3.8.1) and the list of equivalent mutants
(``tests/mutation_equivalents.txt``: one mutant name per line, then the reason).  A timeout counts as killed, as
mutmut's own score does; a mutant no test reaches ("no tests") counts as survived.  An equivalent that a test
kills, or that no longer exists, is reported: the list is kept honest by the run, not by hand.

``--only`` restricts the report to the mutants a run was restricted to (``mutmut run PATTERN ...``): a file of
mutmut's name patterns (``fnmatch``, one a line), so that a module's mutants are those of the functions selected.

``--fresh`` judges surviving mutants of code that runs when its module is imported (engines' preset table):
mutmut forks its workers from a process that imported the module already, so such a mutant is never switched
on and survives whatever the tests say.  Each surviving mutant whose name starts with PREFIX is run in a new
Python process with ``MUTANT_UNDER_TEST`` set (mutmut's trampoline then picks it at import) against ``--tests``,
and its exit code is recorded in mutmut's result file as mutmut records its own.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# mutmut 3.8.1's meaning of a mutant's exit code (mutmut/stats.py); anything else is "suspicious".
_STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
    37: "type check",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    -11: "segfault",
    -9: "segfault",
    None: "not checked",
}
_KILLED = {"killed", "timeout", "type check"}
_SURVIVED = {"survived", "no tests"}


def read_equivalents(path: Path) -> dict[str, str]:
    out = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, why = line.partition(" ")
        if not why.strip():
            raise SystemExit(f"{path}:{number}: an equivalent mutant needs its reason after the name")
        out[name] = why.strip()
    return out


def read_results(mutants: Path) -> dict[str, str]:
    """{mutant name: status} over every ``*.py.meta`` under ``mutants``."""
    out = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        for name, code in data.get("exit_code_by_key", {}).items():
            out[name] = _STATUS.get(code, "suspicious")
    return out


def rerun_fresh(mutants: Path, prefix: str, tests: list[str]) -> list[tuple[str, str]]:
    """Run each surviving mutant named ``prefix...`` in a fresh process; record and return (name, new status)."""
    done = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key", {})
        for name in sorted(codes):
            if not name.startswith(prefix) or _STATUS.get(codes[name]) not in _SURVIVED:
                continue
            env = dict(os.environ, MUTANT_UNDER_TEST=name)
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *tests],
                cwd=mutants,
                env=env,
                capture_output=True,
                text=True,
            )
            codes[name] = run.returncode
            done.append((name, _STATUS.get(run.returncode, "suspicious")))
        meta.write_text(json.dumps(data))
    return done


def read_patterns(path: Path) -> list[str]:
    """mutmut name patterns, one a line (``#`` starts a comment)."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def selected(names, patterns: list[str]) -> set:
    """The names that match one of ``patterns`` (all of them where there is none)."""
    return {n for n in names if not patterns or any(fnmatch.fnmatchcase(n, p) for p in patterns)}


def module_of(name: str) -> str:
    # specsim.timing.kernels.x_build_table__mutmut_3, specsim.serving.xǁStepTableǁ__init____mutmut_1
    return name.split(".x_")[0].split(".xǁ")[0]


def wilson(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion k / n (95% by default)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    centre, half = (
        (p + z * z / (2 * n)) / (1 + z * z / n),
        z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n),
    )
    return max(centre - half, 0.0), min(centre + half, 1.0)


def report(
    results: dict[str, str], equivalents: dict[str, str], sample: frozenset = frozenset()
) -> tuple[list[dict], list[str]]:
    """Counts per module.  Where a module's run is a complete first part plus ``sample``, a uniform random draw from
    the mutants the first part left, the kill rate of the whole module is also estimated: the first part's counts
    plus the sample's shares scaled to the mutants left, with the sample's 95% Wilson interval."""
    rows, problems = defaultdict(lambda: defaultdict(int)), []
    for name, status in results.items():
        row = rows[module_of(name)]
        row["mutants"] += 1
        if status == "not checked" or status == "skipped":
            continue
        if status in _KILLED:
            verdict = "killed"
            if name in equivalents:
                problems.append(f"{name} is listed as equivalent but a test kills it")
        elif name in equivalents:
            verdict = "equivalent"
        else:
            verdict = "survived" if status in _SURVIVED else "other"
        for key in ("run", verdict):
            row[key] += 1
            if name in sample:  # the sample's own counts, for the whole-module estimate
                row["s_" + key] += 1
    problems += [
        f"{name} is listed as equivalent but is not a mutant of this run"
        for name in equivalents
        if name not in results and module_of(name) in rows
    ]
    table = []
    for module in sorted(rows):
        r = rows[module]
        judged = r["run"] - r["equivalent"]
        entry = {
            "module": module.removeprefix("specsim."),
            "mutants": r["mutants"],
            "run": r["run"],
            "killed": r["killed"],
            "survived": r["survived"] + r["other"],
            "equivalent": r["equivalent"],
            "kill_rate": r["killed"] / judged if judged else None,
            "sampled": r["s_run"],
            "estimate": None,
        }
        if r["s_run"]:
            # First part: everything run outside the sample; the rest of the module is what the sample was drawn from.
            k1, j1 = r["killed"] - r["s_killed"], (r["run"] - r["s_run"]) - (r["equivalent"] - r["s_equivalent"])
            rest = r["mutants"] - (r["run"] - r["s_run"])
            killed_share, judged_share = r["s_killed"] / r["s_run"], (r["s_run"] - r["s_equivalent"]) / r["s_run"]
            low, high = wilson(r["s_killed"], r["s_run"])
            denominator = j1 + rest * judged_share
            entry["estimate"] = tuple(min((k1 + rest * f) / denominator, 1.0) for f in (killed_share, low, high))
        table.append(entry)
    return table, problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="?", default="mutants", help="mutmut's working folder (default ./mutants)")
    parser.add_argument("--equivalents", default=str(ROOT / "tests" / "mutation_equivalents.txt"))
    parser.add_argument("--survivors", action="store_true", help="list every survivor that is not a listed equivalent")
    parser.add_argument("--sample", help="a file of mutant names drawn uniformly at random from those a first run left")
    parser.add_argument(
        "--fresh", metavar="PREFIX", help="rerun surviving mutants named PREFIX... each in a new process"
    )
    parser.add_argument("--tests", nargs="+", default=[], help="with --fresh: the test files or ids to run")
    parser.add_argument("--only", help="a file of mutant name patterns: count only the mutants they match")
    args = parser.parse_args(argv)
    mutants = Path(args.mutants)
    if not mutants.is_dir():
        print(f"error: {mutants} is not a folder; run `mutmut run` first (it writes ./mutants)", file=sys.stderr)
        return 2
    if args.fresh is not None:
        if not args.tests:
            print("error: --fresh needs --tests: the tests that judge the mutants", file=sys.stderr)
            return 2
        for name, status in rerun_fresh(mutants, args.fresh, args.tests):
            print(f"fresh: {name}: {status}")
    results = read_results(mutants)
    equivalents = read_equivalents(Path(args.equivalents))
    if args.only:
        patterns = read_patterns(Path(args.only))
        keep = selected(results, patterns)
        results = {name: status for name, status in results.items() if name in keep}
        equivalents = {name: why for name, why in equivalents.items() if name in selected([name], patterns)}
    sample = frozenset(Path(args.sample).read_text().split()) if args.sample else frozenset()
    table, problems = report(results, equivalents, sample)
    print(
        "| module | mutants | run (of which sampled) | killed | survived | equivalent (listed) | kill rate of those run "
        "| whole module, estimated (95% interval) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in table:
        rate = "-" if r["kill_rate"] is None else f"{100 * r['kill_rate']:.1f}%"
        if r["estimate"] is not None:
            whole = "{:.1f}% ({:.1f}-{:.1f}%)".format(*(100 * v for v in r["estimate"]))
        elif r["run"] == r["mutants"]:
            whole = rate + " (all run)"
        else:
            whole = f"- ({r['mutants'] - r['run']} not run)"
        print(
            f"| {r['module']} | {r['mutants']} | {r['run']} ({r['sampled']}) | {r['killed']} | {r['survived']} | "
            f"{r['equivalent']} | {rate} | {whole} |"
        )
    for line in problems:
        print(f"warning: {line}")
    if args.survivors:
        for name, status in sorted(results.items()):
            if status in _SURVIVED and name not in equivalents:
                print(f"survivor: {name} ({status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
