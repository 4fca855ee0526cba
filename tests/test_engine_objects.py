"""Each engine as one object (issue 37): the hooks its subclass answers (draft TP, per-batch control, the one static
length, the schedule it writes, the serve line, the settings), the registry's functions that ask the object, and a
drafter's support read from the engines' tables."""

from __future__ import annotations

import re

import pytest

from specsim.engines import REGISTRY, draft_tp, get_engine, parse_version
from specsim.speculation.deployment import Deployment
from specsim.speculation.schedule import ScheduleRange, TreeRange

# Two ranges of a chain schedule with different lengths, one range, and the same off everywhere.
TWO = [ScheduleRange(1, 8, 4, 2.0, 2.2), ScheduleRange(9, 256, 2, 1.2, 1.9)]
ONE = [ScheduleRange(1, 256, 3, 1.5, 2.0)]
OFF = [ScheduleRange(1, 256, 0, 1.0, 1.0)]


@pytest.fixture(scope="module")
def eagle3():
    return Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="none")


@pytest.fixture(scope="module")
def ngram():
    return Deployment.build("h100-sxm", "llama-3.1-8b", "ngram", timing="roofline", engine="none")


# -- draft TP ---------------------------------------------------------------------------------------------------------
def test_every_engine_runs_the_draft_at_the_targets_tp_unless_asked_and_says_what_it_did_with_the_ask():
    for name, engine in REGISTRY.items():
        preset = get_engine(name)
        for separate in (True, False):
            tp, line = engine.draft_tp(preset, separate, 4, None)
            assert tp == 4 and line.startswith("draft at TP 4"), (name, separate)
    # An ask that does not apply is named (SGLang and TensorRT-LLM take none; vLLM builds heads at the target's TP).
    assert (
        REGISTRY["sglang"]
        .draft_tp(get_engine("sglang"), True, 4, 1)[1]
        .endswith("; draft_options['tp'] 1 does not apply")
    )
    assert (
        REGISTRY["trtllm"]
        .draft_tp(get_engine("trtllm"), True, 4, 1)[1]
        .endswith("; draft_options['tp'] 1 does not apply")
    )
    assert REGISTRY["vllm"].draft_tp(get_engine("vllm"), False, 4, 1) == (
        4,
        "draft at TP 4: vLLM builds EAGLE and MTP heads at the target's TP, draft_tensor_parallel_size notwithstanding "
        "(vllm-project/vllm#31345; #31886 open); draft_options['tp'] 1 has no effect there",
    )
    # vLLM 0.15-0.16 ran a draft model on one GPU beside a sharded target; 0.17-0.33 refuse it, and a preset
    # name stands for its newest release (vllm@0.14 is 0.27.0, which refuses it too).
    assert REGISTRY["vllm"].draft_tp(get_engine("vllm@0.15"), True, 4, 1)[0] == 1
    assert REGISTRY["vllm"].draft_tp(get_engine("vllm@0.16.0"), True, 4, 1)[0] == 1
    for later in ("vllm@0.14", "vllm@0.17.0", "vllm@0.27.0", "vllm@0.33.0"):
        with pytest.raises(ValueError, match="vLLM 0.17-0.33 refuse a draft model at TP 1"):
            REGISTRY["vllm"].draft_tp(get_engine(later), True, 4, 1)
    # 0.34.0 dropped that check (the draft model left v1/spec_decode/draft_model.py) and takes the key, but the draft's
    # layers take the worker's tensor-parallel group: it runs at the target's TP, said so, not refused.
    tp, line = REGISTRY["vllm"].draft_tp(get_engine("vllm"), True, 4, 1)
    assert tp == 4 and "vLLM 0.34.0 takes draft_tensor_parallel_size 1" in line and line.endswith("no effect there")


def test_without_an_engine_the_draft_tp_is_what_was_asked_else_one():
    none = get_engine("none")
    assert draft_tp(none, True, 4, None) == (1, "draft at TP 1 (no engine named; draft_options['tp'] to change)")
    assert draft_tp(none, True, 4, 2) == (2, "draft at TP 2 (draft_options['tp'])")


# -- per-batch control and the one static length ------------------------------------------------------------------------
def test_vllm_changes_the_length_with_the_batch_from_0_24_0(eagle3):
    vllm = REGISTRY["vllm"]
    assert vllm.per_batch_missing(eagle3, TWO, (0, 24, 0)) is None
    assert vllm.per_batch_missing(eagle3, TWO, (0, 23, 1)) == (
        "vLLM 0.23.1 has no num_speculative_tokens_per_batch_size (from 0.24.0, vllm-project/vllm#32374)"
    )
    # Before it, the config's one length is the batch-1 range's; one range needs no per-batch control.
    assert vllm.static_gamma(eagle3, TWO, (0, 23, 1)) == TWO[0].gamma
    assert vllm.static_gamma(eagle3, TWO, (0, 24, 0)) is None and vllm.static_gamma(eagle3, ONE, (0, 23, 1)) is None


def test_only_a_vllm_release_with_the_per_batch_key_takes_a_schedule_that_rises():
    """vLLM's validate_and_normalize_dynamic_sd_schedule (vllm/v1/spec_decode/dynamic/utils.py, 0.24.0 and 0.34.0)
    takes any K >= 0 in any order; before 0.24.0 there is no key, and TensorRT-LLM's validator wants the smallest key's
    length to be max_draft_len (> 0 for Eagle): a schedule for them never rises.  SGLang's keeps the default."""
    from specsim.engines.vllm import RISING_WHERE

    vllm, trtllm, sglang = REGISTRY["vllm"], REGISTRY["trtllm"], REGISTRY["sglang"]
    assert vllm.rising_schedule((0, 24, 0)) == vllm.rising_schedule((0, 34, 0)) == RISING_WHERE
    assert vllm.rising_schedule((0, 23, 1)) == "" and vllm.rising_schedule((0, 10, 0)) == ""
    assert trtllm.rising_schedule((1, 3, 0)) == "" and sglang.rising_schedule((0, 5, 23)) == ""


def test_sglang_changes_the_length_with_the_batch_where_it_takes_adaptive_steps(eagle3, ngram):
    sglang = REGISTRY["sglang"]
    old, new = (0, 5, 12), (0, 5, 23)
    missing = sglang.per_batch_missing(eagle3, TWO, old)
    assert missing.startswith(
        "SGLang 0.5.12 takes one static configuration (per-batch adaptive steps arrived in 0.5.13"
    )
    assert sglang.per_batch_missing(eagle3, TWO, new) is None  # adaptive steps
    assert sglang.per_batch_missing(eagle3, ONE, old) is None  # one length: nothing to change
    assert sglang.per_batch_missing(ngram, TWO, new).startswith("SGLang's adaptive steps take EAGLE and EAGLE-3 only")
    # The one length SGLang runs without them is the batch-1 range's; a tree schedule is not a length.
    assert (
        sglang.static_gamma(eagle3, TWO, old) == TWO[0].gamma and sglang.static_gamma(ngram, TWO, new) == TWO[0].gamma
    )
    assert sglang.static_gamma(eagle3, TWO, new) is None and sglang.static_gamma(eagle3, ONE, old) is None
    trees = [TreeRange(1, 8, None, 1.0, 1.0), TreeRange(9, 256, None, 1.0, 1.0)]
    assert sglang.static_gamma(eagle3, trees, old) is None


def test_tensorrt_llm_changes_the_length_with_the_batch_from_1_3_0_on_its_one_model_paths(eagle3, ngram):
    from specsim.engines.trtllm import ONE_MODEL_SCHEDULE

    trtllm = REGISTRY["trtllm"]
    assert trtllm.per_batch_missing(eagle3, TWO, (1, 3, 0)) is None
    assert trtllm.per_batch_missing(eagle3, TWO, (1, 2, 0)).startswith(
        "TensorRT-LLM 1.2.0 takes no draft_len_schedule that specsim writes"
    )
    assert trtllm.per_batch_missing(ngram, TWO, (1, 3, 0)) == (
        f"TensorRT-LLM's NGram decoding takes no draft_len_schedule (only {', '.join(ONE_MODEL_SCHEDULE)}); it stops "
        "speculating above max_concurrency instead"
    )
    assert trtllm.static_gamma(eagle3, TWO, (1, 2, 0)) is None  # it stops speculating instead (the default hook)


# -- what each engine writes --------------------------------------------------------------------------------------------
def test_a_schedule_that_never_pays_says_so_with_the_gain_and_batches_asked(eagle3):
    vllm_text, vllm_notes = REGISTRY["vllm"].render_schedule(OFF, eagle3, None, (0, 24, 0), 1.05, 128)
    assert (vllm_text, vllm_notes) == (
        "# speculation does not pay (gain >= 1.05) at any batch size 1..128: leave speculative_config unset",
        [],
    )
    trt_text, _ = REGISTRY["trtllm"].render_schedule(OFF, eagle3, None, (1, 3, 0), 1.05, 128)
    assert trt_text == "# speculation does not pay (gain >= 1.05) at batch 1: leave speculative_config unset"


def test_tensorrt_llm_writes_the_draft_checkpoint_it_is_given(eagle3):
    text, notes = REGISTRY["trtllm"].render_schedule(TWO, eagle3, "org/eagle3-head", (1, 3, 0), 1.0, 256)
    assert "speculative_model_dir: org/eagle3-head" in text and notes[0] == "written for TensorRT-LLM 1.3.0"


def test_vllm_names_the_serve_command_only_with_flags(eagle3):
    vllm = REGISTRY["vllm"]
    assert vllm.serve_line(eagle3, []) is None
    assert vllm.serve_line(eagle3, ["--tensor-parallel-size", "2"]) == (
        f"serve the target with: vllm serve {eagle3.target.source or eagle3.target.name} --tensor-parallel-size 2 "
        "--speculative-config '<the JSON above>'"
    )
    # A target named by a file is served by its source, not by its name.
    assert eagle3.target.source is None or eagle3.target.source in vllm.serve_line(eagle3, ["x"])


def test_settings_give_vllm_its_flags_and_every_engine_the_checkpoints_it_cannot_quantise():
    fp8 = Deployment.build(
        "h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="none", target_options={"weight_dtype": "fp8"}
    )
    int4 = Deployment.build(
        "h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine="none", target_options={"weight_dtype": "int4"}
    )
    assert REGISTRY["vllm"].settings(fp8) == (["--quantization", "fp8"], [])  # vLLM quantises to FP8 on load
    assert REGISTRY["sglang"].settings(fp8) == ([], [])  # and SGLang, by vLLM's rule
    trt_flags, trt_notes = REGISTRY["trtllm"].settings(fp8)
    assert trt_flags == [] and trt_notes[0].endswith("(TensorRT-LLM reads pre-quantised checkpoints)")
    for name in ("vllm", "sglang"):
        flags, notes = REGISTRY[name].settings(int4)
        assert flags == [] and len(notes) == 1 and notes[0].endswith("(vLLM quantises to FP8 on load only)"), name


# -- where TensorRT-LLM's names were read ----------------------------------------------------------------------------------
def test_tensorrt_llm_cites_the_commit_it_read_by_its_first_eight_digits():
    from specsim.engines.trtllm import _TRT_COMMIT, METHODS

    cited = [s.where for s in METHODS.values() if "at commit" in s.where]
    assert len(cited) == 3
    for where in cited:
        digits = re.search(r"at commit ([0-9a-f]+);", where).group(1)
        assert len(digits) == 8 and _TRT_COMMIT.startswith(digits), where


# -- the result files each engine's benchmark client writes ------------------------------------------------------------
def test_each_engines_client_files_are_told_apart_by_their_own_keys():
    vllm, sglang, trtllm = (REGISTRY[name].bench_files.recognises for name in ("vllm", "sglang", "trtllm"))
    # vllm bench serve: a backend with any of its keys; benchmark_serving.py before it: mean TPOT and a date.
    for key in ("endpoint_type", "model_id", "spec_decode_acceptance_length"):
        assert vllm({"backend": "vllm", key: 1}) and not vllm({key: 1}) and not vllm({"backend": "vllm"}), key
    every = {"backend": "vllm", "endpoint_type": "openai", "model_id": "m", "spec_decode_acceptance_length": 2.5}
    assert vllm(every) and vllm({"mean_tpot_ms": 9.0, "date": "20260101"})
    assert not vllm({"mean_tpot_ms": 9.0}) and not vllm({"date": "20260101"})
    # sglang.bench_serving: its retokenized count, or its acceptance length without vLLM's.
    assert sglang({"total_output_tokens_retokenized": 10}) and sglang({"accept_length": 2.5})
    assert not sglang({"accept_length": 2.5, "spec_decode_acceptance_length": 2.5}) and not sglang(every)
    # TensorRT-LLM's benchmark_serving: vLLM's keys and its decoded tokens per iteration.
    assert trtllm(every | {"avg_decoded_tokens_per_iter": 2.5}) and not trtllm(every)


def test_a_release_newer_than_the_metric_names_read_is_refused_naming_the_last_read(monkeypatch):
    # No shipped engine has a preset past its metric tables; an engine whose tables lag its presets says so.
    import dataclasses

    from specsim.engines import metric_names

    vllm = REGISTRY["vllm"]
    monkeypatch.setitem(REGISTRY, "vllm", dataclasses.replace(vllm, metric_names=vllm.metric_names[:1]))
    with pytest.raises(ValueError) as refused:
        metric_names("vllm@0.20.0")
    first = vllm.metric_names[0]
    assert str(refused.value) == (
        f"vllm 0.20.0 is newer than the vllm releases whose metric names specsim read ({first.source}; up to 0.10)"
    )


def test_vllm_runs_its_rocm_build_on_an_amd_profile_and_its_preset_elsewhere():
    from specsim.describe.hardware import load_hardware

    vllm, preset = REGISTRY["vllm"], get_engine("vllm")
    rocm = vllm.on_platform(preset, load_hardware("mi300x"))
    assert rocm.platform == "rocm" and rocm.spec != preset.spec
    assert vllm.on_platform(preset, load_hardware("h100-sxm")) is preset
    assert REGISTRY["sglang"].on_platform(preset, load_hardware("mi300x")) is preset  # SGLang's hook: not its preset
    trtllm = get_engine("trtllm")
    assert REGISTRY["trtllm"].on_platform(trtllm, load_hardware("h100-sxm")) is trtllm  # the default hook


# -- a drafter's support, read from the engine's table -------------------------------------------------------------------
def test_support_reads_the_table_of_the_engine_object_it_is_given():
    import dataclasses

    from specsim.engines import EngineSupport
    from specsim.speculation.drafters import Eagle3Head

    vllm = REGISTRY["vllm"]
    own = EngineSupport("eagle3-fork", (0, 30, 0), "a fork's speculative.py")
    fork = dataclasses.replace(vllm, methods=vllm.methods | {"eagle3": own})
    assert Eagle3Head.support(fork) is own and Eagle3Head.support(vllm) is vllm.methods["eagle3"]
    with pytest.raises(ValueError, match=r"^vllm 0\.29\.0 refuses method eagle3-fork \(a fork's speculative\.py\)"):
        Eagle3Head.support(fork, (0, 29, 0))
    # A kind the engine's table lacks and its list of refusals does not name: refused all the same.
    without = dataclasses.replace(vllm, methods={k: v for k, v in vllm.methods.items() if k != "eagle3"})
    with pytest.raises(ValueError, match=r"^vllm does not run .* in any release: not among its drafting methods; "):
        Eagle3Head.support(without)


def test_an_engine_specsim_does_not_know_runs_no_drafter_and_the_refusal_lists_those_that_do():
    from specsim.speculation.drafters import Eagle3Head

    takes = ", ".join(
        f"{name} from {'.'.join(map(str, s.since))}" for name, s in Eagle3Head.supported_engines().items()
    )
    with pytest.raises(ValueError) as refused:
        Eagle3Head.support("tgi")
    assert str(refused.value) == (
        f"tgi does not run {Eagle3Head.label} (draft eagle3) in any release: not among its drafting methods; "
        f"engines that do: {takes}"
    )


# -- the registry's functions ----------------------------------------------------------------------------------------------
def test_an_engine_is_refused_on_hardware_it_does_not_run_on_naming_those_that_do():
    from specsim.describe.hardware import load_hardware
    from specsim.engines import check_platform

    mi300x = load_hardware("mi300x")
    others = [name for name, e in REGISTRY.items() if mi300x.platform in e.platforms]
    with pytest.raises(ValueError) as refused:
        check_platform(get_engine("trtllm"), mi300x)
    assert str(refused.value) == (
        f"trtllm does not run on mi300x, an AMD GPU (ROCm): it runs on cuda; engines that run there: {', '.join(others)}"
    )
    for name in ("vllm", "sglang", "none"):
        assert check_platform(get_engine(name), mi300x) is None
    with pytest.raises(ValueError, match=r"^trtllm does not run on cpu-epyc-2vcpu, a CPU: it runs on cuda; "):
        check_platform(get_engine("trtllm"), load_hardware("cpu-epyc-2vcpu"))


def test_an_engine_that_left_nvidia_gpus_would_be_refused_there_in_the_same_words(monkeypatch):
    # Every shipped engine runs on CUDA; the refusal names an NVIDIA GPU as it names the others.
    import dataclasses

    from specsim.describe.hardware import load_hardware
    from specsim.engines import check_platform

    monkeypatch.setitem(REGISTRY, "sglang", dataclasses.replace(REGISTRY["sglang"], platforms=("rocm",)))
    with pytest.raises(ValueError) as refused:
        check_platform(get_engine("sglang"), load_hardware("h100-sxm"))
    assert str(refused.value) == (
        "sglang does not run on h100-sxm, an NVIDIA GPU: it runs on rocm; engines that run there: vllm, trtllm"
    )


def test_named_release_reads_aliases_and_latest_as_the_releases_they_cover():
    from specsim.engines import named_release

    last = next(r[1] for r in REGISTRY["sglang"].ranges if r[2] == "0.5")
    newest = tuple(int(x) for x in REGISTRY["sglang"].newest.split("."))
    # spec-v1 is sglang@0.5, spec-v2 the current release: as if named by the key they stand for.
    shown = named_release("sglang@0.5")[2]  # sglang@0.5 (releases ...)
    assert named_release("sglang@spec-v1") == ("sglang", last, shown.replace("sglang@0.5", "sglang@spec-v1"))
    assert named_release("sglang@spec-v2") == named_release("sglang@latest") == named_release("sglang")
    assert named_release("sglang@latest") == ("sglang", newest, f"sglang {REGISTRY['sglang'].newest}")
    # A preset's releases named from its first to its last patch where that is not open-ended, and the one release it
    # stands for: the newest of them as specsim read it (x.y.0 of a range open to every x.y patch).
    assert named_release("sglang@0.5")[2] == "sglang@0.5 (SGLang 0.5.10, the newest release of 0.4-0.5.10)"
    assert named_release("vllm@0.14")[1:] == ((0, 27, 0), "vllm@0.14 (vLLM 0.27.0, the newest release of 0.14-0.27)")
    assert named_release("vllm")[1] == named_release("vllm@latest")[1] == (0, 34, 0)
    assert named_release(get_engine("vllm@0.10")) == named_release("vllm@0.10")  # a preset as its key names it


# -- --engine resolved once ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["optimal-gamma", "--timing", "roofline", "--batch", "1,8", "--engine", "vllm@0.24.0"],
        ["speedup", "--timing", "roofline", "--gamma", "3", "--batch", "4", "--engine", "vllm@0.24.0"],
        ["schedule", "--timing", "roofline", "--format", "vllm", "--engine", "vllm@0.24.0"],
        ["bench-plan", "--engine", "vllm@0.24.0", "--draft", "eagle3", "--out", "{tmp}/plan"],
        [
            "calibrate-engine",
            "--plain",
            "examples/bench/vllm-plain.jsonl",
            "--spec",
            "examples/bench/vllm-eagle3.jsonl",
            "--hardware",
            "h100",
            "--draft",
            "eagle3",
            "--steps",
            "3",
            "--engine",
            "vllm@0.24.0",
        ],
    ],
    ids=lambda argv: argv[0],
)
def test_the_engine_flag_is_read_once_and_the_preset_handed_on(argv, monkeypatch, tmp_path, capsys):
    # Every command resolves --engine where it reads its flags (cli/flags.engine_type) and hands the preset on: the
    # drafter check, the source, the calibration, the writer and the plan take the object, and none parses the text
    # again.  The count fails if any layer goes back to the string.
    import specsim.engines as engines
    from specsim.cli.main import main

    seen = []
    resolve = engines._resolve

    def counted(spec, text):
        seen.append(text)
        return resolve(spec, text)

    monkeypatch.setattr(engines, "_resolve", counted)
    assert main([a.format(tmp=tmp_path) for a in argv]) == 0
    capsys.readouterr()
    assert seen.count("vllm@0.24.0") == 1, seen
    assert "vllm" not in seen and "vllm@latest" not in seen, seen  # nor the default engine in its place


def test_an_engine_typo_is_refused_with_the_engine_it_is_closest_to(capsys):
    from specsim.cli.main import main

    with pytest.raises(
        ValueError, match=r"^unknown engine 'vlm'; did you mean vllm\? choose vllm, sglang, trtllm, none"
    ):
        get_engine("vlm@0.24.0")
    with pytest.raises(ValueError, match=r"^unknown engine 'tensorrt'; choose "):  # nothing close: no guess
        get_engine("tensorrt")
    assert main(["optimal-gamma", "--engine", "SGlang@0.5.23", "--timing", "roofline", "--batch", "1"]) == 0
    capsys.readouterr()
    assert main(["optimal-gamma", "--engine", "sglnag", "--batch", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown engine 'sglnag'; did you mean sglang?" in err[0], err


@pytest.mark.parametrize(
    "spec, release",
    [
        ("vllm@0.14", "0.27.0"),
        ("vllm@0.10", "0.13.0"),
        ("vllm", "0.34.0"),
        ("vllm@0.20.0", "0.20.0"),
        ("sglang@0.5", "0.5.10"),
        ("sglang@spec-v1", "0.5.10"),
        ("sglang", "0.5.23"),
        ("trtllm", "1.3.0rc29"),
    ],
)
def test_a_preset_name_is_one_release_to_the_answers_the_writers_and_the_json(spec, release):
    """vllm@0.14's answers were read at 0.27 while schedule --format vllm wrote (and refused) for 0.14.0, bench-plan
    planned for "0.14" and sglang@0.5's limits said 0.5.10 beside "written for SGLang 0.5.0"."""
    from specsim.calibration.plan import resolve_version
    from specsim.engines import named_release, preset_releases
    from specsim.engines.base import preset_release
    from specsim.speculation.deployment import Deployment

    preset = get_engine(spec)
    number = parse_version(preset.name, release)
    assert preset_release(preset.name, preset, REGISTRY[preset.name].ranges) == number  # what the answers read
    assert named_release(spec)[1] == number  # the drafter check, the metric names and schedule's writers
    assert resolve_version(spec)[1] == release  # bench-plan
    first, last = (parse_version(preset.name, v) for v in preset_releases(preset).split("-"))
    assert first <= number <= last  # a release the preset covers
    if preset.name == "vllm":
        dep = Deployment.build("h100-sxm", "llama-3.1-8b", "eagle3", timing="roofline", engine=spec)
        assert dep.identity()["engine_release"] == release  # --json's deployment


def test_get_engine_refuses_none_and_numbers_rather_than_reading_their_text():
    """get_engine(None) returned the 'none' preset (str(None) lower-cased), an engine that adds no time, where
    Deployment.build(engine=None) takes vllm: a notebook's None was read as 'no engine'; get_engine(3) named an
    engine '3'.  Each is now a TypeError naming what an engine is."""
    from specsim.engines import get_engine

    with pytest.raises(
        TypeError, match=r"^an engine is a name \(vllm, sglang, trtllm, none, .* got NoneType: None is not"
    ):
        get_engine(None)
    with pytest.raises(TypeError, match="or an EnginePreset, got int$"):
        get_engine(3)
    assert get_engine("none").key == "none" and get_engine(" VLLM@0.11 ").key == "vllm@0.10"
