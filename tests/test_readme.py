"""Every `specsim` command the README and the docs show runs as written, and the output they quote is what it prints.

The commands are the `$ specsim ...` lines of the console blocks of README.md and docs/**/*.md; the lines a block shows
after a command (other than `...`) must each appear, verbatim, in what the command prints (stdout or stderr, as a
terminal shows both); a line ending in `: ...` is quoted up to its colon.  A block that quotes an error line
(`specsim CMD: error: ...`) expects the command to fail with exit status 2; a command whose trailing comment says
`# exit status N` (a watch's verdicts: docs/watch.md) must exit N; every other command must exit 0.

They run from a scratch folder that sees the repository's `examples/`, `specsim/` and `hardware/` (so the docs'
relative paths resolve and nothing is written into the checkout); outputs under /tmp go to the scratch folder.  A
command that reads what another writes (`--out`, `--plot`, `--csv`) runs after it, in the same test, so the tests hold
in any order and under pytest-xdist; two different commands may not write one path.  The same command shown on
several pages runs once and is checked against each page's quote.  Commands that need a GPU are listed, not run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from specsim.cli.main import main

REPO = Path(__file__).resolve().parent.parent
#: Commands that need an accelerator: the docs show them for GPU users.
NEEDS_GPU = ("--cuda-graphs", "--device cuda")
#: Commands that time real passes with the torch harness; without torch installed they are skipped, not failed.
TIMES_ON_TORCH = ("specsim measure ", "specsim measure-loop ")
HAS_TORCH = importlib.util.find_spec("torch") is not None
#: Flags whose value is a file or folder the command writes.
WRITES = ("--out", "--plot", "--csv")
#: Commands that take minutes, run only where SPECSIM_SLOW_DOCS=1 is set (their group is skipped elsewhere, saying so):
#: docs/watch.md's replayed day simulates 683,462 requests (4 min 1 s on a shared 2-core machine, its watch 31 s more).
SLOW = ("specsim replay --engine vllm@0.26.0 --target llama-3.1-8b --draft llama-3.2-1b --alpha 0.58 --gamma 3 ",)
#: Images the docs show as a command of theirs draws them: the file the command writes (``--plot day.png``), the one
#: committed.  Each is checked byte for byte where matplotlib is the release that drew it (as tests/test_figures.py's
#: figures: the PNG names it).
DRAWN = {"day.png": "docs/images/watch-day.png"}
#: What the scratch folder links to, so that the docs' relative paths resolve.
LINKED = ("examples", "specsim", "hardware")
#: The README's own floor: the front door shows at least this many distinct commands, and stays short.
README_COMMANDS, README_MAX_LINES = 10, 250

_FENCE = re.compile(r"^( *)```console\n(.*?)^\1```", flags=re.S | re.M)


def pages(repo: Path = REPO) -> list[Path]:
    """README.md and every page of docs/, in a fixed order."""
    return [repo / "README.md"] + sorted((repo / "docs").rglob("*.md"))


def _blocks(text: str) -> list[list[tuple[str, list[str], int | None]]]:
    """Console blocks (fenced at any indentation) as lists of (command, shown output lines, the exit status its trailing
    comment gives or None)."""
    blocks = []
    for indent, body in _FENCE.findall(text):
        entries: list[tuple[str, list[str], int | None]] = []
        for line in body.splitlines():
            line = line[len(indent) :] if line.startswith(indent) else line
            if line.startswith("$ "):
                command, *comment = re.split(r"\s#\s", line[2:], maxsplit=1)  # a trailing comment goes
                status = re.match(r"exit status (\d+)\b", comment[0].strip()) if comment else None
                entries.append((command.strip(), [], int(status[1]) if status else None))
            elif entries:
                entries[-1][1].append(line)
        blocks.append(entries)
    return blocks


@dataclass(frozen=True)
class Shown:
    """One command as one page shows it."""

    page: str
    command: str
    lines: tuple[str, ...]
    status: int | None = None  #: the exit status the command's comment gives (``# exit status 5``)

    @property
    def fails(self) -> bool:
        """The page quotes the command's one-line error: it must exit 2."""
        return any(re.match(r"specsim [\w-]+: error: ", line) for line in self.lines)


def shown(repo: Path = REPO) -> list[Shown]:
    """Every runnable `specsim` command of the README and the docs, in page order."""
    out = []
    for page in pages(repo):
        for block in _blocks(page.read_text()):
            for command, lines, status in block:
                if command.startswith("specsim ") and not any(flag in command for flag in NEEDS_GPU):
                    out.append(Shown(str(page.relative_to(repo)), command, tuple(lines), status))
    return out


def _written(command: str) -> set[str]:
    words = shlex.split(command)
    return {words[i + 1] for i, w in enumerate(words[:-1]) if w in WRITES}


def _reads(words: list[str], path: str) -> bool:
    """A command of these words reads ``path`` (or a file under it)."""
    pattern = re.compile(rf"(^|[:=]){re.escape(path)}($|/)")
    return any(pattern.search(word) for word in words)


def groups(repo: Path = REPO) -> list[tuple[str, ...]]:
    """The distinct commands, grouped with those whose output they read; each group in the order it must run."""
    commands = list(dict.fromkeys(s.command for s in shown(repo)))
    # Each command split once: the pairs below split every command twice per other command (7,800 shlex.split calls,
    # 0.4 s of each worker's collection).
    words = {c: shlex.split(c) for c in commands}
    written = {c: _written(c) for c in commands}
    needs = {c: {w for w in commands if w != c and any(_reads(words[c], p) for p in written[w])} for c in commands}
    component = {c: {c} for c in commands}
    for c in commands:
        for w in needs[c]:
            merged = component[c] | component[w]
            for member in merged:
                component[member] = merged
    out, seen = [], set()
    for c in commands:
        if c in seen:
            continue
        order: list[str] = []

        def visit(x: str) -> None:
            if x not in order:
                for w in sorted(needs[x], key=commands.index):
                    visit(w)
                order.append(x)

        for member in sorted(component[c], key=commands.index):
            visit(member)
        seen.update(order)
        out.append(tuple(order))
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("docs")
    for name in LINKED:
        (folder / name).symlink_to(REPO / name)
    return folder


def _run(command: str, scratch: Path) -> tuple[int, str, str]:
    argv = [a.replace("/tmp/", f"{scratch}/") for a in shlex.split(command)[1:]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _check(entry: Shown, code: int, out: str, err: str) -> None:
    where = f"{entry.page}: {entry.command}"
    if entry.fails:
        assert code == 2, f"{where}: the page shows an error, the command exited {code}"
    elif entry.status is not None:
        assert code == entry.status, f"{where}: the page says exit status {entry.status}, the command exited {code}"
    else:
        assert code == 0, f"{where}: exit {code}: {err[-500:]}"
    printed = {line.rstrip() for line in (out + "\n" + err).splitlines()}
    for line in entry.lines:
        if line.strip() in ("", "..."):
            continue
        if line.rstrip().endswith(": ..."):  # a line shown up to its colon: some printed line starts so
            head = line.rstrip()[: -len(" ...")]
            assert any(p.startswith(head) for p in printed), (
                f"{where}: the page shows a line it does not print:\n{line}"
            )
            continue
        assert line.rstrip() in printed, f"{where}: the page shows a line it does not print:\n{line}"


def _params() -> list:
    """Each group as a test; ``specsim figures`` runs on the worker that draws the figures (tests/test_figures.py's
    xdist group), where the serve-sweep figure's simulations are already done once for the process, and ``specsim toy
    distill`` on the worker of tests/test_toy.py, whose fixture re-aligns the same toy (seed 0) that the command
    prints (specsim.article.toy.realign keeps its answer per process)."""
    figures, toy = pytest.mark.xdist_group("figures"), pytest.mark.xdist_group("toy")

    def marks(group: tuple) -> list:
        if any(c.startswith("specsim figures") for c in group):
            return [figures]
        return [toy] if any(c.startswith("specsim toy distill") for c in group) else []

    return [pytest.param(g, id=g[-1], marks=marks(g)) for g in groups()]


@pytest.mark.parametrize("group", _params())
def test_docs_command_runs_and_prints_what_the_docs_quote(group, scratch, monkeypatch):
    if not HAS_TORCH and any(c.startswith(TIMES_ON_TORCH) for c in group):
        pytest.skip("the timing harness needs torch (the harness extra, which the README's test command installs)")
    if os.environ.get("SPECSIM_SLOW_DOCS") != "1" and any(c.startswith(SLOW) for c in group):
        pytest.skip("takes minutes (tests/test_readme.py's SLOW): run with SPECSIM_SLOW_DOCS=1")
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    entries = shown()
    for command in group:  # writers before the commands that read what they wrote
        code, out, err = _run(command, scratch)
        for entry in (e for e in entries if e.command == command):
            _check(entry, code, out, err)
    for drawn, committed in DRAWN.items():
        if any(drawn in _written(command) for command in group):
            _same_image(scratch / drawn, REPO / committed, group[-1])


def _same_image(drawn: Path, committed: Path, command: str) -> None:
    """``committed`` is the PNG ``command`` drew (``drawn``), byte for byte, where this matplotlib drew both."""
    import matplotlib
    from PIL import Image

    with Image.open(committed) as image:
        made_with = image.info.get("Software", "")
    if matplotlib.__version__ not in made_with:
        pytest.skip(f"{committed.name} was drawn by {made_with!r}; this is matplotlib {matplotlib.__version__}")
    assert drawn.read_bytes() == committed.read_bytes(), (
        f"{committed.relative_to(REPO)} is not what `{command}` draws now: copy its {drawn.name} there"
    )


def test_the_readme_is_a_front_door(repo):
    text = (repo / "README.md").read_text()
    commands = [s.command for s in shown(repo) if s.page == "README.md"]
    assert len(set(commands)) >= README_COMMANDS, (
        f"the README shows {len(set(commands))} commands, not {README_COMMANDS}"
    )
    assert commands[0] == "specsim optimal-gamma", "the README's first command is the headline answer"
    assert any("examples/" in c for c in commands)
    assert len(text.splitlines()) <= README_MAX_LINES, "the README is the front door; reference material goes in docs/"


def test_every_console_block_of_the_docs_is_checked(repo):
    # A block the parser missed (an unclosed fence, a different indentation) would go unchecked: count them twice.
    runnable = {s.page for s in shown(repo)}
    for page in pages(repo):
        text = page.read_text()
        fences = len(re.findall(r"^ *```console$", text, flags=re.M))
        blocks = _blocks(text)
        name = str(page.relative_to(repo))
        assert len(blocks) == fences, f"{name}: {fences} console fences, {len(blocks)} read"
        for block in blocks:
            assert any(c.startswith("specsim ") for c, *_ in block), (
                f"{name}: a console block without a specsim command"
            )
        if blocks:
            assert name in runnable or all(any(f in c for f in NEEDS_GPU) for b in blocks for c, *_ in b), name
    assert {"README.md", "docs/getting-started.md", "docs/calibrate.md"} <= runnable


def test_no_two_commands_write_one_path(repo):
    writers: dict[str, set[str]] = {}
    for s in shown(repo):
        for path in _written(s.command):
            writers.setdefault(path, set()).add(s.command)
    clashes = {p: sorted(c) for p, c in writers.items() if len(c) > 1}
    assert not clashes, f"different commands write the same path (their order would decide the output): {clashes}"


def test_a_command_that_reads_another_runs_after_it(repo):
    order = {c: (i, j) for i, g in enumerate(groups(repo)) for j, c in enumerate(g)}
    calibrated = [c for c in order if "--calibration /tmp/calibration.yaml" in c]
    writer = "specsim calibrate-engine --plan examples/bench/plan/plan.yaml --out /tmp/calibration.yaml"
    assert calibrated and all(order[c][0] == order[writer][0] and order[c][1] > order[writer][1] for c in calibrated)


def test_gpu_only_commands_are_the_measure_ones(repo):
    gpu = [
        c
        for page in pages(repo)
        for block in _blocks(page.read_text())
        for c, *_ in block
        if any(flag in c for flag in NEEDS_GPU)
    ]
    assert gpu and all(c.startswith("specsim measure") for c in gpu)
    assert os.path.isfile(repo / "examples" / "h200-measured.csv")


def test_the_first_answers_prose_says_the_table_it_follows(repo):
    """The sentence under the first answer (README's "The answer", getting-started's "The first answer") restates its
    table: the best gamma and its speedup to two decimals.  It said "gamma = 3 and 1.67x at 64" where the table quoted
    above it says 1.650 (a model change left the prose behind), and cut some speedups (1.896 as 1.89x) and rounded
    others (1.826 as 1.83x).
    Each "gamma = G and S.SSx at [batch] B" and each "S.SSx at B" after it must be the default answer's at batch B."""
    from specsim.answers import gamma_answer
    from specsim.speculation.deployment import Deployment

    rows = {r["batch"]: r for r in gamma_answer(Deployment.build(), 0.8, batches=[1, 16, 32, 64, 128, 256]).rows}
    for page, heading in (("README.md", "## The answer"), ("docs/getting-started.md", "## The first answer")):
        text = (repo / page).read_text().split(heading, 1)[1]
        prose = text.split("```", 2)[2].strip().split("\n\n", 1)[0]  # the paragraph under the table
        said = re.split(r"\. On vLLM", prose, maxsplit=1)[0]  # the default engine's, before other versions'
        gamma = None
        found = []
        for g, speedup, batch in re.findall(r"(?:γ = (\d+) and )?(\d\.\d\d)x at (?:batch )?(\d+)", said):
            gamma = int(g) if g else gamma
            found.append((int(batch), gamma, speedup))
        assert len(found) >= 3, (page, said)
        for batch, g, speedup in found:
            row = rows[batch]
            assert (row["gamma"], speedup) == (g, f"{row['speedup']:.2f}"), (page, batch)
