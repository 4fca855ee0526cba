"""The validation corpus (examples/bench/public/): every source names where its numbers come from and how they were
renamed, every run it holds is one calibrate-engine reads, and every deployment either builds or says why not."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from specsim.calibration.bench_files import read_bench_file

ROOT = Path(__file__).resolve().parent.parent / "examples" / "bench" / "public"
SOURCES = sorted(p.parent for p in ROOT.glob("*/source.yaml"))
REQUIRED = (
    "source",
    "title",
    "repository",
    "commit",
    "paths",
    "engine",
    "engine_spec",
    "hardware",
    "tp",
    "target",
    "drafter",
    "load",
    "lengths",
    "acceptance",
    "runs",
    "mapping",
)


def test_the_corpus_spans_the_sources_engines_gpus_and_drafters_issue_35_asks_for():
    specs = [yaml.safe_load((s / "source.yaml").read_text()) for s in SOURCES]
    modelled = [s for s in specs if s["engine_spec"] and s["target"]]
    assert len({s["repository"] for s in modelled}) >= 6
    assert {s["engine"] for s in modelled} >= {"vllm", "sglang", "trtllm"}
    assert len({s["hardware"] for s in modelled}) >= 3
    drafters = {s["drafter"] for s in modelled}
    assert (
        "eagle3" in drafters
        and "mtp" in drafters
        and "dspark" in drafters
        and any(d.startswith("qwen3-") for d in drafters)
    )


@pytest.mark.parametrize("folder", SOURCES, ids=[s.name for s in SOURCES])
def test_each_source_says_where_its_numbers_come_from_and_every_run_reads(folder):
    spec = yaml.safe_load((folder / "source.yaml").read_text())
    missing = [k for k in REQUIRED if k not in spec]
    assert not missing, missing
    assert spec["source"] == folder.name and len(str(spec["commit"])) == 40 and spec["mapping"].strip()
    converters = {p.stem for p in (ROOT.parent.parent.parent / "scripts" / "public_bench").glob("*.py")}
    assert folder.name in converters or (
        spec["repository"].endswith("InferenceX-app") and "inferencex-dsr1-mtp" in converters
    )
    listed = {r["file"] for r in spec["runs"]}
    assert listed == {p.name for p in folder.glob("*.jsonl")}, "the manifest lists every run file, and only those"
    for row in spec["runs"]:
        runs = read_bench_file(folder / row["file"])
        assert runs and all(r.value > 0 for r in runs)
        assert (row["kind"] == "spec") == ("steps" in row)
    if isinstance(spec["target"], str) and spec["target"].endswith(".json"):
        assert (folder / spec["target"]).is_file()
    for d in spec.get("deployments") or []:
        assert any(Path(r["file"]).match(d["files"]) for r in spec["runs"]), d["name"]


@pytest.mark.parametrize("folder", SOURCES, ids=[s.name for s in SOURCES])
def test_each_deployment_builds_or_says_why_not(folder):
    import importlib.util

    path = ROOT.parent.parent.parent / "benchmarks" / "validate_corpus.py"
    spec = importlib.util.spec_from_file_location("validate_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for d in module.deployments(folder):
        dep, why = module.build(d, folder)
        assert (dep is None) == bool(why)
        if dep is None:
            assert why and ("not one of the engines" in why or "config.json is not in the source" in why), why


def test_a_measured_speedup_is_over_plain_runs_of_the_same_engine_build():
    """The B200 TensorRT-LLM source holds two campaigns on two builds (its engine_version: 1.2.0rc6 for the files
    without a suffix, 1.3.0rc14 for the *-trt1.3.0rc14 files).  Until 2026-12-07 validate_corpus made one deployment of
    them, and at 8k/1k its measured speedup at 4 users pooled both builds' plain runs over one MTP run (1.716, where
    1.2.0rc6 alone gives 1.87) and at 256 users one plain run over both builds' MTP runs: each speculative run is paired
    here with plain runs of its own build only."""
    import importlib.util

    from specsim.calibration.runs import over

    path = ROOT.parent.parent.parent / "benchmarks" / "validate_corpus.py"
    spec = importlib.util.spec_from_file_location("validate_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = ROOT / "b200-trtllm-dsr1-fp8-mtp"
    build = {True: "1.3.0rc14", False: "1.2.0rc6"}
    paired = 0
    for d in module.deployments(folder):
        runs = module.runs_of(d, folder)
        for c in (c for c in runs if c.setup is not None):
            mine = build[Path(c.run.path).name.endswith("-trt1.3.0rc14.jsonl")]
            plain = [p for p in runs if p.setup is None and over(p.run, c.run)]
            if not plain:  # (a load where the plain runs are of other lengths: no speedup)
                continue
            assert {build[Path(p.run.path).name.endswith("-trt1.3.0rc14.jsonl")] for p in plain} == {mine}, c.run.where
            paired += 1
    # every speculative run of 1.2.0rc6 that has a plain run at its load is still scored (1k/1k c 4; 1k/8k c 4, 32;
    # 8k/1k c 4, 256)
    assert paired == 5


def test_a_deployment_whose_arms_share_no_load_says_why_it_scores_nothing():
    """MI325X's InferenceX rows hold the plain arm at 4 and 8 users and the MTP arm at 16 to 64; B200 TensorRT-LLM
    1.3.0rc14's at 4 and 64 against 32 and 256.  Until 2026-12-07 validate_corpus fitted their plain runs and printed
    n/a in every column with no reason; it now says which loads each arm ran, and that no speedup can be scored, and
    fits nothing.  A deployment with one paired load is scored as before."""
    import importlib.util

    path = ROOT.parent.parent.parent / "benchmarks" / "validate_corpus.py"
    spec = importlib.util.spec_from_file_location("validate_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folders = [ROOT / "mi325x-sglang-dsr1-fp8-mtp", ROOT / "b200-trtllm-dsr1-fp8-mtp"]
    deps = {d["name"].split(":")[0]: (f, d) for f in folders for d in module.deployments(f)}
    mi325x = module._one(*deps[next(k for k in deps if "MI325X" in k)])
    rc14 = module._one(*deps["TensorRT-LLM 1.3.0rc14"])
    assert "plain at concurrency 4, concurrency 8; speculative at concurrency 16, concurrency 32" in mi325x["skipped"]
    assert "plain at concurrency 4, concurrency 64; speculative at concurrency 32, concurrency 256" in rc14["skipped"]
    assert "runs" not in mi325x and "runs" not in rc14  # nothing fitted
    assert module.unscored(deps["TensorRT-LLM 1.2.0rc6"][1], folders[1]) is None


def test_the_split_files_validation_writes_one_file_per_load_without_its_acceptance(tmp_path):
    """benchmarks/validate_split_files.py leaves a sweep as vllm bench serve does: one file per concurrency, no
    acceptance; the files read back as the same runs, one per load, with none recorded."""
    import importlib.util

    path = ROOT.parent.parent.parent / "benchmarks" / "validate_split_files.py"
    spec = importlib.util.spec_from_file_location("validate_split_files", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = ROOT / "a100-llama-3.1-8b-eagle3" / "fp16-kvfp16-eagle3-gsm8k.jsonl"
    whole = read_bench_file(source)
    for repeat in range(3):
        files = module.split(source, repeat, tmp_path, f"r{repeat}")
        runs = [r for f in files for r in read_bench_file(f)]
        assert sorted(r.load for r in runs) == sorted({r.load for r in whole})
        assert all(r.accept_length is None for r in runs) and all(r.accept_length is not None for r in whole)
        nth = [r for r in whole if r.load == runs[0].load][repeat]
        assert runs[0].value == nth.value


#: The transcription scripts that write their manifest from a template (the others build it in code).
CONVERTERS = sorted(
    p
    for p in (ROOT.parent.parent.parent / "scripts" / "public_bench").glob("*.py")
    if "SOURCE_YAML = " in p.read_text()
)


@pytest.mark.parametrize("script", CONVERTERS, ids=lambda p: p.stem)
def test_a_converter_writes_the_manifest_its_folder_holds(script, monkeypatch):
    """Each transcription script writes its folder's source.yaml from a template (its run lines in place of @RUNS@):
    a line added to the manifest by hand and not to the template (an engine_spec, a limit, a deployment) would be
    lost the next time the source is transcribed."""
    import importlib.util

    monkeypatch.syspath_prepend(str(script.parent))  # as when it runs: its siblings (_lotto3090, _manifest) import
    spec = importlib.util.spec_from_file_location(script.stem.replace("-", "_"), script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    template = module.SOURCE_YAML
    manifest = (ROOT / module.SOURCE / "source.yaml").read_text()
    runs = "".join(line for line in manifest.splitlines(keepends=True) if line.startswith("  - {file:"))
    assert template.replace("@RUNS@\n", runs) == manifest


def test_a_published_acceptance_is_not_stretched_past_the_positions_it_was_measured_at():
    """DeepSeek-V3's MTP acceptance is published for one position: column (a*) took it at every depth of 2 and 3 step
    sweeps (the rate 0.875 each), the extrapolation Acceptance.expected_tokens refuses.  Those groups are now not
    predicted there; a per-token rate covers any depth."""
    import importlib.util

    from specsim.speculation.deployment import Deployment

    path = ROOT.parent.parent.parent / "benchmarks" / "validate_corpus.py"
    spec = importlib.util.spec_from_file_location("validate_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mtp = Deployment.build("h200", "deepseek-v3", "mtp", target_options={"tp": 8})
    assert module.published_steps(mtp) == 1
    assert module.published_steps(Deployment.build("h100", "llama-3.1-8b", "llama-3.2-1b")) is None
    folder = ROOT / "h200-sglang-dsr1-fp8-mtp"
    d = module.deployments(folder)[0]
    dep, _ = module.build(d, folder)
    runs = module.runs_of(d, folder)
    _, published, beyond = module.uncalibrated(dep, runs, module.limits_of(d, dep))
    assert not published and beyond and {k[1] for k in beyond} == {2}
    assert all(m > 0 and p != p for m, p in beyond.values())


@pytest.mark.parametrize("folder", SOURCES, ids=[s.name for s in SOURCES])
def test_the_manifest_writer_reads_back_as_the_manifest_with_a_comment_on_every_one_line_key(folder):
    """scripts/public_bench/_manifest.py, the converters' one YAML writer, puts a provenance comment after a top-level
    value only where the value takes one line: a comment after the first line of a value that runs on (a long title in
    quotes) would become part of it. Every manifest of the corpus, written with a comment on every key the writer
    takes one for, loads back as the same data; a key it refuses is one whose value runs on."""
    import importlib.util

    path = ROOT.parent.parent.parent / "scripts" / "public_bench" / "_manifest.py"
    spec = importlib.util.spec_from_file_location("_manifest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = yaml.safe_load((folder / "source.yaml").read_text())
    commented = {}
    for key in doc:
        try:
            module.manifest_yaml(doc, {key: "a note # with a hash"})
        except ValueError as err:
            assert "takes more than one line" in str(err)
            continue
        commented[key] = "a note # with a hash"
    assert {"source", "engine_spec"} <= set(commented)
    text = module.manifest_yaml(doc, commented)
    assert yaml.safe_load(text) == doc
    assert all(f"   # {note}" in text for note in commented.values())
