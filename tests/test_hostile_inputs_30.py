"""Issue 30's hostile inputs and environments, one row per case: one line and exit 2, or the right answer.

Each refusal row names the files it needs (written fresh into tmp_path), the command and the words its one line on
stderr must hold; nothing may be written.  The rows after them are valid inputs and hostile environments (a kernel
cache folder that loops, is read-only or full; stale staging files) whose answer must be the normal one.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from specsim.cli.main import main

HAS_TORCH = importlib.util.find_spec("torch") is not None

METRICS = (
    'vllm:spec_decode_num_drafts_total{{model_name="m"}} {d}\n'
    'vllm:spec_decode_num_draft_tokens_total{{model_name="m"}} {t}\n'
    'vllm:spec_decode_num_accepted_tokens_total{{model_name="m"}} {a}\n'
)
TRACE_HEAD = "arrival_s,prompt_tokens,output_tokens\n"
CSV_HEAD = "model,batch,tokens_per_seq,context,median_s\n"
PROFILE = "name: mine\npeak_flop_per_s: 1.0e+14\npeak_bytes_per_s: 1.0e+12\nmemory_bytes: 8.0e+10\n"


def _guidellm_streams(value: float) -> str:
    from pathlib import Path

    report = json.loads(
        (Path(__file__).resolve().parent.parent / "examples" / "bench" / "guidellm-plain.json").read_text()
    )
    report["benchmarks"][1]["config"]["strategy"]["streams"] = value
    return json.dumps(report)


# Files a row may refer to as {tmp}/NAME; each is made only for the rows that name it.
FILES = {
    "deep.jsonl": lambda: '{"a": ' * 100_000 + "1" + "}" * 100_000 + "\n",
    "label.txt": lambda: 'vllm:spec_decode_num_drafts_total{model_name="' + "x" * (20 * 1024 * 1024) + '"} 10\n',
    "digits.csv": lambda: (
        CSV_HEAD
        + "".join(f"llama-3.2-1b,{b},1,0,0.001\n" for b in (1, 2, 4, 8, 16, 32, 64))
        + "llama-3.2-1b,"
        + "9" * 400
        + ",1,0,0.001\n"
    ),
    "slow.csv": lambda: CSV_HEAD + "".join(f"llama-3.2-1b,{b},{q},0,1e300\n" for b in (1, 2, 4, 8, 16) for q in (1, 2)),
    "dup-header.csv": lambda: "arrival_s,prompt_tokens,output_tokens,arrival_s\n0,10,10,5\n1,10,10,4\n",
    "dup-key.jsonl": lambda: '{"arrival_s": 0, "prompt_tokens": 5, "prompt_tokens": 7, "output_tokens": 3}\n',
    "gamma.txt": lambda: METRICS.format(d=1, t="1000", a=0),  # 1e308 is refused as no count now (check_count)
    "trace.csv": lambda: TRACE_HEAD + "".join(f"{i * 0.5},{100 + i},{50 + i}\n" for i in range(60)),
    "h100": lambda: PROFILE,
    "meta-llama/Llama-3.1-8B-Instruct/config.json": lambda: Path(_catalog("llama-3.2-1b")).read_text(),
    "g45.json": lambda: _guidellm_streams(4.5),
}


def _catalog(name: str) -> str:
    from specsim.describe import models

    return str(models._CATALOG / f"{name}.json")


CASES = [
    # traces: the JSON depth limit, duplicate columns and keys, a trace replayed once
    ("serve-sim --trace {tmp}/deep.jsonl", "trace deep.jsonl, line 1 nests 100000 levels deep; at most 64"),
    ("serve-sim --trace {tmp}/dup-header.csv", "the header names arrival_s more than once"),
    ("serve-sim --trace {tmp}/dup-key.jsonl", "line 1: the key 'prompt_tokens' appears twice"),
    (
        "serve-sim --trace {tmp}/trace.csv --runs 3",
        "--runs 3 with --trace: a trace is one fixed set of requests and is replayed once",
    ),
    # metrics pages: a bounded line, a draft length in range
    (
        "alpha --metrics {tmp}/label.txt",
        "label.txt, line 1 is 20,971,571 characters long; a /metrics line has at most 4,096",
    ),
    ("alpha --metrics {tmp}/gamma.txt", "is 1000 per draft; a draft proposes 1 to 64 tokens"),
    ("optimal-gamma --metrics {tmp}/gamma.txt", "a draft proposes 1 to 64 tokens"),
    # measured CSVs: numbers in range
    (
        "calibrate {tmp}/digits.csv --hardware h100-sxm --out {tmp}/out/p.yaml",
        "column batch has a 400-digit number at data row 8",
    ),
    (
        "calibrate {tmp}/slow.csv --hardware h100-sxm --out {tmp}/out/p.yaml",
        "median_s must be a pass time in [1e-07, 1000] seconds; data row 1 has 1e+300",
    ),
    (
        "optimal-gamma --timing measured:{tmp}/slow.csv --target llama-3.2-1b --draft llama-3.2-1b",
        "median_s must be a pass time in [1e-07, 1000] seconds",
    ),
    # serving rates: no inf anywhere
    ("serve-sim --requests 200 --rate 1e308 --json", "a request rate must be in (0, 1e+06] per second, got 1e308"),
    ("serve-sweep --rates 1,1e308 --requests 20", "a request rate must be in (0, 1e+06] per second"),
    # empty names and lists
    ("figures --only , --out {tmp}/out", "--only needs a comma-separated list of names, got ','"),
    ("compose-kernels --hardware , --out {tmp}/out", "--hardware needs a comma-separated list of names, got ','"),
    ("compose-kernels --models , --out {tmp}/out", "--models needs a comma-separated list of names"),
    ("explain --plot ", "--plot needs a file name, got an empty one"),
    ("serve-sweep --rates 1 --requests 20 --plot ", "--plot needs a file name, got an empty one"),
    ("calibrate {tmp}/slow.csv --hardware h100-sxm --out ", "--out needs a file name, got an empty one"),
    ("calibrate-engine --plain {tmp}/g45.json --hardware h100 --out ", "--out needs a file name, got an empty one"),
    ("bench-plan --engine vllm@0.24.0 --out ", "--out needs a folder name, got an empty one"),
    ("figures --out ", "--out needs a folder name, got an empty one"),
    # a local file named like a built-in is never shadowed by it (cwd is tmp_path)
    (
        "steptime --hardware h100 --timing roofline --batch 1",
        "hardware 'h100' names both the file 'h100' and the built-in profile h100-sxm: give ./h100 for the file, or h100-sxm",
    ),
    (
        "steptime --model meta-llama/Llama-3.1-8B-Instruct --timing roofline --batch 1",
        "names both the file 'meta-llama/Llama-3.1-8B-Instruct/config.json' and the built-in shape llama-3.1-8b",
    ),
    # fixed on main before issue 30 was taken: verified here
    ("optimal-gamma --engine vllm@", "argument --engine: engine 'vllm@' names no version after '@'"),
    ("optimal-gamma --engine vllm@\u0660.\u0661\u0664", "no vllm preset for version '\u0660.\u0661\u0664'"),
    ("optimal-gamma --engine vllm@\uff10.\uff11\uff14", "no vllm preset for version '\uff10.\uff11\uff14'"),
    (
        "calibrate-engine --plain {tmp}/g45.json --hardware h100",
        "config.strategy.streams must be a whole number of streams, got 4.5",
    ),
]
if HAS_TORCH:
    CASES += [
        ("measure-loop --batch 65536 --tokens 4 --context 4096", "needs 2,816.0 GB"),
        (
            "measure --model tiny-5m --device cpu --compile --warmup 0 --repeats 2 --batch 1 --out {tmp}/out/c.csv",
            "--compile needs --warmup of at least 1",
        ),
        ("measure --model tiny-5m --device cpu --batch 1 --out ", "--out needs a file name, got an empty one"),
    ]


def _argv(command: str, tmp_path) -> list[str]:
    # Split on single spaces so that a trailing "--out " is the empty argument a shell passes for --out ''.
    return command.format(tmp=tmp_path).split(" ")


#: Files in the working folder (tmp_path) that a command names without a path: the local shadows of built-in names.
LOCAL = {
    "h100": "--hardware h100 ",
    "meta-llama/Llama-3.1-8B-Instruct/config.json": "--model meta-llama/Llama-3.1-8B-Instruct ",
}


def _make(command: str, tmp_path) -> None:
    for name, content in FILES.items():
        if "{tmp}/" + name in command or (name in LOCAL and LOCAL[name] in command):
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content())
    (tmp_path / "out").mkdir(exist_ok=True)


@pytest.mark.parametrize("command, message", CASES, ids=[c[0][:60] for c in CASES])
def test_issue30_bad_input_gets_one_line_and_exit_2(command, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _make(command, tmp_path)
    code = main(_argv(command, tmp_path))
    out, err = capsys.readouterr()
    lines = [line for line in err.strip().splitlines() if not line.startswith(("note: ", "specsim: building"))]
    assert code == 2, (command, out[-300:], err[-500:])
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]
    assert list((tmp_path / "out").iterdir()) == []  # nothing written


def test_a_symlink_loop_as_output_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    (tmp_path / "m.csv").write_text(FILES["slow.csv"]().replace("1e300", "0.01"))
    assert (
        main(["calibrate", str(tmp_path / "m.csv"), "--hardware", "h100-sxm", "--out", str(tmp_path / "loop.yaml")])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("it is a symlink loop (remove the link or choose another name)"), err


# -- valid inputs and hostile environments: the right answer ------------------------------------------
def test_schedule_with_gamma_max_zero_is_speculation_off_like_optimal_gamma(capsys):
    assert main(["schedule", "--gamma-max", "0", "--max-batch", "64", "--json"]) == 0
    ranges = json.loads(capsys.readouterr().out)["ranges"]
    assert [(r["start_batch"], r["end_batch"], r["gamma"], r["max_speedup"]) for r in ranges] == [(1, 64, 0, 1.0)]
    assert main(["optimal-gamma", "--gamma-max", "0", "--batch", "1,64", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["gamma"] for r in rows] == [0, 0] and all(r["at_gamma_max"] for r in rows)  # nothing searched
    # and not said not to pay: "even gamma = 1 costs more" was printed of a gamma never weighed (1.49x at gamma 1)
    assert main(["optimal-gamma", "--gamma-max", "0", "--batch", "1,64"]) == 0
    out = capsys.readouterr().out
    assert "speculation is off at batch 1, 64: gamma_max 0 searches no gamma" in out and "costs more" not in out
    # and at loads: "do not speculate" was recommended of a gamma never weighed; the load view says it as the batch view
    assert main(["optimal-gamma", "--gamma-max", "0", "--concurrency", "1,8", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["recommendation"] for r in rows] == [
        "speculation off: gamma_max 0 searches no gamma: speculation was not "
        "weighed (--gamma-max 1 or more to weigh it)"
    ] * 2


def test_a_trace_is_replayed_once_and_counted_once(tmp_path, capsys):
    (tmp_path / "t.csv").write_text(FILES["trace.csv"]())
    assert main(["serve-sim", "--trace", str(tmp_path / "t.csv"), "--alpha", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seeds"] == [0] and out["off"]["runs"] == 1 and out["off"]["served"] == out["on"]["served"] == 60
    assert "a trace is replayed once: no interval" in " ".join(out["provenance"])


def test_arrivals_a_denormal_apart_give_json_without_inf(tmp_path, capsys):
    (tmp_path / "t.csv").write_text(TRACE_HEAD + "0,10,10\n1e-310,10,10\n2e-310,10,10\n")
    assert main(["serve-sim", "--trace", str(tmp_path / "t.csv"), "--alpha", "0.8", "--json"]) == 0
    text = capsys.readouterr().out
    out = json.loads(text)  # Python's json writes inf as Infinity, which strict parsers refuse
    assert "Infinity" not in text and out["off"]["arrival_rate_per_s"] is None and out["off"]["served"] == 3


def _kernel_answer(capsys) -> tuple[int, dict, list[str]]:
    """(exit status, the answer without the notes, the notes said on stderr): the JSON's rows carry the same notes
    (NOTES_IN_JSON), held here to stderr's and set apart, so that an answer with a cache note compares as the same."""
    code = main(["steptime", "--model", "llama-3.2-1b", "--timing", "kernels", "--batch", "1,64", "--json"])
    out, err = capsys.readouterr()
    notes = [line.removeprefix("note: ") for line in err.splitlines() if line.startswith("note: ")]
    answer = json.loads(out) if code == 0 else []
    assert all(row.pop("notes") == notes for row in answer)
    return code, answer, notes


@pytest.fixture
def reference(tmp_path_factory, monkeypatch, capsys):
    """The answer with a working cache folder of its own."""
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path_factory.mktemp("good-cache")))
    code, answer, notes = _kernel_answer(capsys)
    assert code == 0 and not any("not cached" in n for n in notes)
    return answer


def _loop_folder(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    return tmp_path / "loop"


def _looped_files(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    from specsim.describe.hardware import load_hardware
    from specsim.describe.models import get_model
    from specsim.timing.kernels import KernelSource, _meta, cache_file

    src = KernelSource(load_hardware("h100-sxm"))
    key = json.dumps(_meta(get_model("llama-3.2-1b"), src.device, src.engine, src.version), sort_keys=True)
    name = cache_file(key).name
    (folder / name).symlink_to(folder / name)  # the cache file itself leads back to itself
    return folder


@pytest.mark.parametrize("kind", ["loop-folder", "loop-file", "read-only", "full"])
def test_a_hostile_cache_folder_never_fails_the_answer(kind, reference, tmp_path, monkeypatch, capsys):
    import specsim.core.files as files

    folder = {"loop-folder": _loop_folder, "loop-file": _looped_files}.get(kind, lambda t: t / "cache")(tmp_path)
    if kind in ("read-only", "full"):  # this suite runs as root, for whom permissions do not hold: the OS's own error
        number = errno.EROFS if kind == "read-only" else errno.ENOSPC

        def refuse(path, data):
            raise OSError(number, os.strerror(number), str(path))

        monkeypatch.setattr(files, "_stage", refuse)
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(folder))
    code, answer, notes = _kernel_answer(capsys)
    assert code == 0 and answer == reference
    cache_notes = [n for n in notes if "not cached" in n]
    assert len(cache_notes) == 1 and "they are built in memory for this run" in cache_notes[0], notes


def test_stale_staging_files_are_removed_and_live_ones_kept(tmp_path, monkeypatch, capsys):
    from specsim.timing import kernels

    monkeypatch.setattr(kernels, "_SWEPT", set())  # a new process: the folder is swept on first use
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path))
    stale, live = tmp_path / ".kernels-0123abcd.json.abc123.tmp", tmp_path / ".kernels-4567abcd.json.def456.tmp"
    other = tmp_path / ".notes.txt.ghi789.tmp"  # not a kernel-cache staging name: never touched
    for path in (stale, live, other):
        path.write_bytes(b"partial")
    old = time.time() - kernels.STALE_STAGING_S - 60
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    code, _, _ = _kernel_answer(capsys)
    assert code == 0 and not stale.exists() and live.exists() and other.exists()
    assert len(list(tmp_path.glob("kernels-*.json"))) == 1


def test_measured_percentiles_must_bracket_their_median(tmp_path):
    from specsim.timing.measurements import load_measurements

    rows = pd.DataFrame(
        {
            "model": "llama-3.2-1b",
            "batch": [1, 2, 4, 8, 16, 32, 64, 128],
            "tokens_per_seq": 1,
            "context": 0,
            "median_s": 0.01,
            "p10_s": 0.009,
            "p90_s": 0.011,
        }
    )
    rows.loc[5, "p90_s"] = 0.005
    rows.to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(
        ValueError, match=r"data row 6 has a median 0.01 s outside its 10th-90th percentiles \[0.009, 0.005\] s"
    ):
        load_measurements(tmp_path / "m.csv")


def test_an_empty_figure_selection_is_refused_not_read_as_all(tmp_path):
    from specsim.figures.make import make_all

    with pytest.raises(ValueError, match=r"^no figure named; known: speedup-vs-gamma, "):
        make_all(tmp_path, [])
    assert list(tmp_path.iterdir()) == []
