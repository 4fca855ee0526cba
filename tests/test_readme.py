"""Every `specsim` command the README shows runs as written, and the output it quotes is what the command prints.

The commands are the `$ specsim ...` lines of the README's console blocks; the lines a block shows after a command
(other than `...`) must each appear, verbatim, in what the command prints.  They run from a scratch folder that sees
the repository's `examples/` and `specsim/` (so the README's relative paths resolve and nothing is written into the
checkout); outputs under /tmp go to the scratch folder.  Commands that need a GPU are listed, not run.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

from specsim.cli.main import main

REPO = Path(__file__).resolve().parent.parent
#: Commands that need an accelerator: the README shows them for GPU users.
NEEDS_GPU = ("--cuda-graphs", "--device cuda")


def _blocks(readme: str) -> list[list[tuple[str, list[str]]]]:
    """Console blocks as lists of (command, shown output lines)."""
    blocks = []
    for body in re.findall(r"```console\n(.*?)```", readme, flags=re.S):
        entries: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                entries.append((line[2:], []))
            elif entries:
                entries[-1][1].append(line)
        blocks.append(entries)
    return blocks


def _commands(repo) -> list[tuple[str, list[str], tuple[str, ...]]]:
    """(command, shown output, the block's earlier commands): a command may read what an earlier one wrote."""
    out = []
    for block in _blocks((repo / "README.md").read_text()):
        earlier: list[str] = []
        for command, shown in block:
            command = re.split(r"\s#\s", command)[0].strip()  # a trailing comment
            if command.startswith("specsim ") and not any(flag in command for flag in NEEDS_GPU):
                out.append((command, shown, tuple(earlier)))
                earlier.append(command)
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme")
    for name in ("examples", "specsim"):
        (folder / name).symlink_to(REPO / name)
    return folder


def test_the_readme_shows_its_commands(repo):
    commands = [c for c, *_ in _commands(repo)]
    assert len(commands) >= 35 and any("explain" in c for c in commands) and any("examples/" in c for c in commands)


@pytest.fixture(scope="module")
def ran():
    """Commands already run in the module's scratch folder (what they wrote is there)."""
    return set()


#: What ``specsim calibrate`` may answer, in one line, on timings this shared CPU took: its wall clock under load is
#: noise (tests/test_calibrate.py judges the fit on synthetic timings with known answers).
TIMING_REFUSALS = ("too noisy to fit", "does not describe these measurements")


def _reads_cpu_timings(command: str, earlier) -> bool:
    """Whether ``command`` reads a CSV that an earlier ``specsim measure --device cpu`` of its block timed here."""
    args = shlex.split(command)[1:]
    for before in earlier:
        words = shlex.split(before)[1:]
        if words[:1] == ["measure"] and "--device" in words and words[words.index("--device") + 1] == "cpu" \
                and "--out" in words and words[words.index("--out") + 1] in args:
            return True
    return False


def _timing_refusal(command: str, earlier, code: int, err: str, scratch) -> bool:
    """A one-line refusal of CPU timings, with nothing written: a correct answer of calibrate on a busy machine."""
    lines = err.strip().splitlines()
    if not (code == 2 and _reads_cpu_timings(command, earlier) and len(lines) == 1 and any(r in lines[0] for r in TIMING_REFUSALS)):
        return False
    args = shlex.split(command)[1:]
    out = args[args.index("--out") + 1] if "--out" in args else None
    return out is None or not (scratch / out).exists()


def _run(command: str, scratch) -> tuple[int, str, str]:
    argv = [a.replace("/tmp/", f"{scratch}/") for a in shlex.split(command)[1:]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


_OUTPUT_FLAGS = ("--out", "--csv", "--plot")


def _needs(command: str, earlier) -> tuple[str, ...]:
    """The earlier commands of the block whose files ``command`` reads (a path one of them wrote with --out, --csv or
    --plot appears in its arguments), with what those read in turn, in the block's order.  Commands share nothing
    else: each is a fresh process to the shell that runs the block."""
    args = shlex.split(command)[1:]
    needed: list[str] = []
    for i, before in enumerate(earlier):
        words = shlex.split(before)[1:]
        wrote = [words[k + 1] for k, w in enumerate(words[:-1]) if w in _OUTPUT_FLAGS]
        if any(path and any(path in a for a in args) for path in wrote):
            needed += [c for c in _needs(before, earlier[:i]) if c not in needed] + [before]
    return tuple(needed)


def _params() -> list:
    """The commands as test cases, each with the earlier commands whose files it reads.  A command and what it reads
    share an xdist group, so that under ``pytest -n 2 --dist loadgroup`` they run in one worker and the earlier ones
    (the README's CPU measurement: a minute of timed passes) run once, not again in each worker that needs them."""
    cases = [(command, shown, _needs(command, earlier)) for command, shown, earlier in _commands(REPO)]
    first = {command: needs[0] for command, _, needs in cases if needs}
    chained = set(first.values())
    out = []
    for command, shown, needs in cases:
        group = first.get(command, command if command in chained else None)
        marks = [pytest.mark.xdist_group(name=f"readme: {group}")] if group else []
        out.append(pytest.param(command, shown, needs, marks=marks, id=command))
    return out


@pytest.mark.parametrize("command, shown, earlier", _params())
def test_readme_command_runs_and_prints_what_the_readme_quotes(command, shown, earlier, scratch, ran, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for i, before in enumerate(earlier):  # in any test order: the block's commands this one reads from, first (cpu.csv for calibrate)
        if before not in ran:
            code, _, err = _run(before, scratch)
            assert code == 0 or _timing_refusal(before, earlier[:i], code, err, scratch), f"{before}: {err[-500:]}"
            ran.add(before)
    code, out, err = _run(command, scratch)
    ran.add(command)
    if _timing_refusal(command, earlier, code, err, scratch):
        return  # the README's calibrate of a CPU measurement, refused in one line on timings too noisy to fit
    assert code == 0, f"{command}: {err[-500:]}"
    printed = {line.rstrip() for line in out.splitlines()}
    for line in shown:
        if line.strip() in ("", "..."):
            continue
        if line.rstrip().endswith(": ..."):  # a line shown up to its colon: some printed line starts so
            head = line.rstrip()[:-len(" ...")]
            assert any(p.startswith(head) for p in printed), f"{command}: the README shows a line it does not print:\n{line}"
            continue
        assert line.rstrip() in printed, f"{command}: the README shows a line it does not print:\n{line}"


def test_gpu_only_commands_are_the_measure_ones(repo):
    text = (repo / "README.md").read_text()
    gpu = [line for block in _blocks(text) for line, _ in block if any(flag in line for flag in NEEDS_GPU)]
    assert gpu and all(line.startswith("specsim measure") for line in gpu)
    assert os.path.isfile(repo / "examples" / "h200-measured.csv")
