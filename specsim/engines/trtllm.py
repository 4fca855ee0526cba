"""TensorRT-LLM: its preset, its speculative_config writer and its benchmark plan.

One preset (1.0-1.3: the PyTorch backend, as trtllm-serve --backend pytorch runs it; no public batch sweep of its
speculative rounds: their host terms are 0).
Writers: ``speculative_config`` with ``draft_len_schedule`` (PR NVIDIA/TensorRT-LLM#10860; ``get_draft_len_for_batch_size``
in tensorrt_llm/_torch/speculative/utils.py), the ``--extra_llm_api_options`` YAML, and the benchmark plan.
"""

from __future__ import annotations

import itertools
from typing import Any

from specsim.core.names import draft_option, given_as
from specsim.engines.base import (
    _BASIS,
    MetricNames,
    RecurrentVerify,
    Release,
    SpecHost,
    as_release,
    make_preset,
    parse_version,
)
from specsim.engines.engine import BenchFiles, DefaultLimits, Engine, EngineSupport, KvPolicy, MemoryShare
from specsim.engines.writers import SHAREGPT_PREP as _SHAREGPT_PREP
from specsim.engines.writers import BenchWriter
from specsim.engines.writers import version_text as _version_text

__all__ = [
    "ENGINE",
    "METHODS",
    "UNSUPPORTED",
    "PLATFORMS",
    "ALIASES",
    "CAPPED_RISE",
    "DRAFT_MODEL_KEY_SINCE",
    "DRAFT_TARGET_SPELLINGS",
    "EAGLE3_SPELLINGS",
    "METRIC_NAMES",
    "NAME",
    "NEWEST",
    "ONE_MODEL_SCHEDULE",
    "PRESETS",
    "RANGES",
    "SCHEDULE_SINCE",
    "TrtllmBench",
    "decoding_type",
    "draft_length_keys",
    "draft_model_key",
    "draft_tp",
    "render_schedule",
    "to_trtllm",
    "trtllm_notes",
    "trtllm_options",
]

NAME = "trtllm"
#: The hardware platforms (a profile's ``platform``) this engine runs on: TensorRT-LLM runs on NVIDIA GPUs only.
PLATFORMS = ("cuda",)
PLAIN = dict(
    kernel_engine="trtllm",
    iteration_s=0.20e-3,
    kernel_iteration_s=0.0,
    basis=_BASIS + ", TensorRT-LLM rows; the GPU-time term ends at its bound 0: not identified, held at 0",
    collective_s=23.9e-6,
    kernel_collective_s=12.5e-6,
)
#: Recurrent layers: PythonMambaCacheManager keeps an intermediate_ssm state per step of T = draft tokens + 1 for each
#: speculating slot ("Legacy: full intermediate SSM states at each step"), unless use_replay_state_update (default
#: False in its constructor) selects the replay path (tensorrt_llm/_torch/pyexecutor/mamba_cache_manager.py, read at
#: commit 00bce92c of NVIDIA/TensorRT-LLM: no 1.x wheel was read, so the version is the commit).
RECURRENT = RecurrentVerify(
    "checkpoint",
    1,
    "TensorRT-LLM tensorrt_llm/_torch/pyexecutor/mamba_cache_manager.py at commit "
    "00bce92c: intermediate_ssm per step, replay opt-in",
)
PRESETS = [
    make_preset(
        "trtllm",
        "latest",
        "TensorRT-LLM 1.0-1.3: PyTorch backend (trtllm-serve --backend pytorch); speculative host terms 0",
        PLAIN,
        SpecHost(),
        SpecHost(),
        "no public measurement across batch sizes",
        recurrent=RECURRENT,
    )
]
#: The newest release whose facts specsim read: 1.3.0rc29 (PyPI, 2026-12-07: the newest 1.3; no 1.3.0 final, and
#: 1.4.0rc1 exists but its writers' facts were not read).  Read there, in the API reference NVIDIA/TensorRT-LLM
#: publishes per release on its gh-pages branch (``1.3.0rc29/llm-api/reference/<Config>.html``, stored commit
#: bf0ee2fb): DraftTargetDecodingConfig's ``decoding_type: Literal['Draft_Target']`` and ``draft_len_schedule`` as
#: inclusive upper bounds ("Batch sizes 1-4: use draft_len=4 ... 33+: use draft_len=0"), as at 1.3.0rc8; the
#: Eagle3DecodingConfig, MTPDecodingConfig, NGramDecodingConfig, DFlashDecodingConfig and DSparkDecodingConfig pages
#: are there.  A later release, 1.3.0 among them, is refused as unread, as ``vllm@9.9.9`` is.
NEWEST = "1.3.0rc29"
#: The preset's releases start at the 1.0 line's first release candidate: its terms were fitted to aiconfigurator's
#: public rows, TensorRT-LLM 1.0.0rc3 among them (the writers' facts start where each was read).
RANGES = [(Release("1.0.0rc0"), Release(NEWEST), "latest")]
#: What TensorRT-LLM's OpenAI server exports on /prometheus/metrics (its /metrics is JSON iteration stats) when its
#: LLM args set return_perf_metrics (iteration counters also need enable_iter_perf_stats): class MetricsCollector in
#: tensorrt_llm/metrics/collector.py, read at commit 050f80d of NVIDIA/TensorRT-LLM, with the speculative counters of
#: PRs #12545 and #12636 (opened 2026-03-25 and 2026-03-31; no release wheel could be read, so the first release that
#: carries them is not pinned: the 1.3 line, from its first release candidate, is assumed).  Multiprocess mode: gauges carry a pid label, counters no _created.
#: The per-position counters count a request when it finishes and are created for positions that drafted.
METRIC_NAMES = [
    MetricNames(
        engine="trtllm",
        first=Release("1.3.0rc0"),
        last=(1, 3, 99),
        path="/prometheus/metrics",
        prefix="trtllm_",
        model_label="model_name",
        replica_label=None,
        running="trtllm_num_requests_running",
        waiting="trtllm_num_requests_waiting",
        requests="trtllm_request_success_total",
        prompt_tokens="trtllm_prompt_tokens_total",
        generation_tokens="trtllm_generation_tokens_total",
        draft_tokens="trtllm_spec_decode_num_draft_tokens_total",
        accepted="trtllm_spec_decode_num_accepted_tokens_total",
        accepted_per_position="trtllm_spec_decode_accepted_tokens_total",
        drafted_per_position="trtllm_spec_decode_drafted_tokens_total",
        position_label="token_position",
        accept_length_gauge="trtllm_spec_decode_acceptance_length",
        gamma_info=("trtllm_speculative_config_info", "spec_num_tokens"),
        counted_at_finish=True,
        per_position_at_finish=True,
        counter_labels=(("engine_type", "pytorch"),),
        request_labels=(("finished_reason", "length"),),
        gauge_labels=(("engine_type", "pytorch"), ("pid", "1")),
        source="tensorrt_llm/metrics/collector.py at commit 050f80d (PRs #12545, #12636; first release not pinned)",
        note="the first TensorRT-LLM release with these counters is not pinned (PRs #12545 and #12636 of 2026-03/04)",
    ),
]
ALIASES: dict[str, str] = {}


def draft_tp(preset, separate_model: bool, target_tp: int, requested: int | None) -> tuple[int, str]:
    """TensorRT-LLM has no separate draft TP (NVIDIA/TensorRT-LLM#11838, draft_tp_size, closed unmerged; no such key in
    tensorrt_llm/llmapi/llm_args.py): the drafter runs at the target's."""
    line = f"draft at TP {target_tp}: TensorRT-LLM runs the drafter at the target's TP (no draft TP key; #11838 closed)"
    unused = f"; {draft_option('tp')} {requested} does not apply" if requested not in (None, target_tp) else ""
    return target_tp, line + unused


#: draft_len_schedule keys read as inclusive upper batch bounds, the tail above the largest key at 0: the one-model
#: path from 1.3.0rc8 (NVIDIA/TensorRT-LLM#10860), every algorithm after #12262 (in the 1.3.0rc27 and 1.4 API references;
#: tensorrt_llm/_torch/speculative/utils.py, get_draft_len_for_batch_size).  specsim writes it from 1.3.0rc8.
#: Read per release in DecodingBaseConfig (the gh-pages ``<release>/_modules/tensorrt_llm/llmapi/llm_args.html`` pages,
#: commits at :data:`DRAFT_TARGET_SPELLINGS`): 1.0.0 and 1.1.0 have no ``draft_len_schedule`` field; 1.2.0, 1.2.1 and
#: 1.3.0rc2 have the #8194 form, which asks for key 1 with ``schedule[1] == max_draft_len`` and documents its keys as
#: lower bounds ("batch_size >= 4: use draft_len=2"); 1.3.0rc8 asks the smallest key's length to be max_draft_len and
#: documents them as upper bounds ("Batch sizes 1-4: use draft_len=4", "33+: 0"), as 1.3.0rc29 does.  So 1.2.x
#: and 1.3.0rc2 take the key, in the older reading, which specsim does not write; 1.3.0rc3-rc7 were not read, so
#: specsim writes the schedule from 1.3.0rc8, the first release read with it.  No 1.3.0 final exists (PyPI,
#: 2026-12-07: 1.3.0rc29 the newest 1.3).
SCHEDULE_SINCE = Release("1.3.0rc8")
#: The decoding types whose one-model workers take the schedule (SpeculativeDecodingMode.support_dynamic_draft_len,
#: tensorrt_llm/_torch/speculative/interface.py): a 0-length tier there can silently collapse acceptance when the batch
#: shrinks back (#16888, open), so specsim keeps them at 1 or more.
ONE_MODEL_SCHEDULE = ("Eagle3", "MTP", "DraftTarget")
#: Why a TensorRT-LLM one-model schedule may fall and rise back to its batch-1 length: DecodingBaseConfig's
#: validate_draft_len_schedule_and_sort (tensorrt_llm/llmapi/llm_args.py, read in two stored states of NVIDIA/
#: TensorRT-LLM: the #8194 form asks schedule[1] == max_draft_len, the later one the smallest key's length) asks of each
#: entry a key >= 1 and a length >= 0, of the first tier max_draft_len and of every other at most max_draft_len, and
#: nothing of their order; get_draft_len_for_batch_size (tensorrt_llm/_torch/speculative/utils.py) gives a batch the
#: length of the smallest key at or above it, 0 past the largest.  specsim writes no 0-length tier there (#16888), so
#: every batch drafts at least 1.
CAPPED_RISE = (
    "TensorRT-LLM's draft_len_schedule takes any length up to max_draft_len, the batch-1 tier's, in any order "
    "(validate_draft_len_schedule_and_sort, tensorrt_llm/llmapi/llm_args.py); specsim writes no 0-length tier on the "
    "one-model path (NVIDIA/TensorRT-LLM#16888), so every batch drafts at least 1"
)


#: What a YAML ``speculative_config`` must say to get DraftTargetDecodingConfig, by release (first, last, spelling, how
#: known: "read", or a word saying how else it was known, which :func:`decoding_type` turns into a note).  Read in each
#: release's rendered source, the ``_modules/tensorrt_llm/llmapi/llm_args.html`` page NVIDIA/TensorRT-LLM publishes per
#: release on its gh-pages branch (``<release>/_modules/...``, stored commit named).  1.0.0 (090dc649), 1.1.0 (8660c119),
#: 1.2.0 (7e873e54) and 1.2.1 (58fb435e): ``update_llm_args_with_extra_dict`` hands the YAML ``speculative_config`` to
#: ``DecodingBaseConfig.from_dict`` (read at 1.1.0 and 1.2.0), which looks its ``decoding_type`` up in a dict whose key
#: is ``"DraftTarget"`` and raises "Invalid decoding type" for a name not in it (the class's own ``decoding_type =
#: "Draft_Target"`` is a ClassVar the YAML never reaches); the same at commit fcd3f316 (early 2025).  1.3.0rc8
#: (3f54ea80): ``DraftTargetDecodingConfig.decoding_type: Literal["Draft_Target"]`` and no ``from_dict`` left on
#: DecodingBaseConfig, as at commit 00043967 (2026 main) and in the 1.3.0rc27 and 1.4.0rc1 API references.  At 00043967
#: the pydantic union ``SpeculativeConfig`` discriminates on these Literals and no before-validator maps ``DraftTarget``
#: (the only legacy name handled is ``Eagle``, TorchLlmArgs.validate_speculative_config); the union's own lines were
#: not found in the rc8 page; 1.3.0rc29's API reference has the same Literal.  1.3.0rc2 (8ec257a2) still has the
#: from_dict design, key ``"DraftTarget"``, so the first row runs to 1.3.0rc2 and the second from 1.3.0rc8, as
#: :data:`SCHEDULE_SINCE` does; 1.3.0rc3-rc7 were not read, so no spelling is written for them (a row's releases
#: between two read ones are taken to read as both ends do).
DRAFT_TARGET_SPELLINGS = (
    ((1, 0, 0), Release("1.3.0rc2"), "DraftTarget", "read"),
    (Release("1.3.0rc8"), (1, 3, 99), "Draft_Target", "read"),
)
#: The same for EAGLE-3, read in the same pages.  1.0.0, 1.1.0, 1.2.0 and 1.2.1: ``from_dict``'s dict has no ``"Eagle3"``
#: key (its keys: MTP, Medusa, Eagle, Lookahead, NGram, DraftTarget, [SaveState from 1.2.0,] UserProvided, AUTO), so
#: ``Eagle3`` is an "Invalid decoding type"; ``"Eagle"`` gives EagleDecodingConfig, whose ``eagle3_one_model`` (default
#: True) makes its PyTorch ``spec_dec_mode`` EAGLE3_ONE_MODEL (read at 1.0.0, 1.1.0 and 1.2.0).  1.3.0rc2 adds the key
#: ``"Eagle3"`` (Eagle3DecodingConfig, and ``Eagle`` turned into it on the PyTorch backend); Eagle3DecodingConfig's
#: Literal is ``"Eagle3"`` at 00043967 and in the 1.3.0rc27 API reference.  1.3.0rc0 and rc1 were not read, so no
#: spelling is written for them.
EAGLE3_SPELLINGS = (
    ((1, 0, 0), (1, 2, 99), "Eagle", "read"),
    (Release("1.3.0rc2"), (1, 3, 99), "Eagle3", "read"),
)


def decoding_type(decoding: str, version: tuple) -> tuple[str, str | None]:
    """The ``decoding_type`` TensorRT-LLM ``version`` reads for specsim's decoding ``decoding``, and a note where the
    spelling was not read from that release (:data:`DRAFT_TARGET_SPELLINGS`, :data:`EAGLE3_SPELLINGS`; the other
    decodings are spelled alike in every release).

    >>> decoding_type("DraftTarget", Release("1.3.0rc8")), decoding_type("DraftTarget", Release("1.3.0rc2"))
    (('Draft_Target', None), ('DraftTarget', None))
    >>> decoding_type("Eagle3", (1, 1, 0)), decoding_type("Eagle3", Release("1.3.0rc2")), decoding_type("MTP", (1, 1, 0))
    (('Eagle', None), ('Eagle3', None), ('MTP', None))
    """
    rows = {"DraftTarget": DRAFT_TARGET_SPELLINGS, "Eagle3": EAGLE3_SPELLINGS}.get(decoding)
    if rows is None:
        return decoding, None
    v = _version_text(version)
    for first, last, name, known in rows:
        if first <= as_release(version) <= last:
            break
    else:
        read = ", ".join(f"{_version_text(first)}-{_version_text(last)} {name}" for first, last, name, _ in rows)
        raise ValueError(
            f"TensorRT-LLM {v}: its decoding_type for {decoding} was not read (read: {read}; "
            "tensorrt_llm/llmapi/llm_args.py): name a release read"
        )
    if known == "read":
        return name, None
    return name, (
        f"TensorRT-LLM {v}: decoding_type {name} for {decoding} is {known}, not read from a {v} release "
        "(tensorrt_llm/llmapi/llm_args.py)"
    )


#: Why MTP's draft length is written under both of its names (:func:`draft_length_keys`), for the notes.
MTP_LENGTH_NOTE = (
    "MTP's draft length is written as both max_draft_len and num_nextn_predict_layers: before "
    "NVIDIA/TensorRT-LLM#12341 MTPDecodingConfig sets max_draft_len from num_nextn_predict_layers (default 1), from it "
    "num_nextn_predict_layers is a deprecated alias dropped beside max_draft_len (its deprecation warning is expected); "
    "the first release with #12341 was not pinned"
)


def draft_length_keys(decoding: str, steps: int) -> dict[str, int]:
    """The ``speculative_config`` keys that give TensorRT-LLM's ``decoding`` a draft length of ``steps``: the one home
    of them for the schedule writer (:func:`to_trtllm`) and the benchmark plan (:class:`TrtllmBench`).

    ``max_draft_len``; MTP also ``num_nextn_predict_layers``.  Before NVIDIA/TensorRT-LLM#12341 (opened 2026-03-19)
    MTPDecodingConfig's after-validator set_max_total_draft_tokens sets ``max_draft_len = num_nextn_predict_layers``
    (default 1), so ``max_draft_len`` alone runs one draft token (tensorrt_llm/llmapi/llm_args.py in the pre-1.3 state
    whose MTP warning names "release 1.3" as future; the 1.0-era state's ``__init__`` does the same).  From #12341
    ``num_nextn_predict_layers`` is read from the checkpoint, and the YAML's is a deprecated alias that
    ``_remap_deprecated_num_nextn_predict_layers`` drops where ``max_draft_len`` is given (llm_args.py at 00043967).
    Which 1.x release first holds #12341 was not pinned, so both are written: each design runs ``steps``.

    >>> draft_length_keys("MTP", 3)
    {'max_draft_len': 3, 'num_nextn_predict_layers': 3}
    >>> draft_length_keys("Eagle3", 3)
    {'max_draft_len': 3}
    """
    return {"max_draft_len": steps, **({"num_nextn_predict_layers": steps} if decoding == "MTP" else {})}


#: The release whose DecodingBaseConfig first names the draft checkpoint ``speculative_model`` (with
#: ``AliasChoices("speculative_model", "speculative_model_dir")``, read at 1.2.0, 7e873e54, and 1.3.0rc8, 3f54ea80).
#: 1.0.0 (090dc649) and 1.1.0 (8660c119) have ``speculative_model_dir`` alone, and DecodingBaseConfig is a
#: StrictBaseModel (``extra = "forbid"``, read at 1.1.0), so ``speculative_model`` is refused there (gh-pages
#: ``<release>/_modules/tensorrt_llm/llmapi/llm_args.html``, as :data:`DRAFT_TARGET_SPELLINGS`).
DRAFT_MODEL_KEY_SINCE = (1, 2, 0)


def draft_model_key(version: tuple) -> str:
    """The ``speculative_config`` key of a separate draft model's checkpoint at TensorRT-LLM ``version``
    (:data:`DRAFT_MODEL_KEY_SINCE`).

    >>> draft_model_key((1, 1, 0)), draft_model_key(Release("1.3.0rc8"))
    ('speculative_model_dir', 'speculative_model')
    """
    return "speculative_model" if as_release(version) >= DRAFT_MODEL_KEY_SINCE else "speculative_model_dir"


def to_trtllm(ranges: list, draft_model: str | None, dep=None, version: tuple | None = None) -> dict[str, Any] | None:
    """TensorRT-LLM ``speculative_config`` for ``version`` (default :data:`NEWEST`); None if speculation does not pay at
    batch 1.

    From 1.3.0, ``draft_len_schedule`` ``{largest batch of a range: draft length}`` for Eagle3, MTP and DraftTarget
    (``max_draft_len`` the value at its smallest key, every later length capped to it; where specsim has speculation off
    the length is 1, not 0: see :data:`ONE_MODEL_SCHEDULE`); NGram keeps its length and stops speculating past
    ``max_concurrency``.  Before 1.3.0 the batch-1 length alone.  :func:`trtllm_notes` says what each choice costs.
    """
    version = parse_version(NAME, NEWEST) if version is None else as_release(version)
    if ranges[0].gamma == 0:
        return None
    first = ranges[0].gamma
    drafter = None if dep is None else dep.drafter
    if drafter is not None:
        drafter.support("trtllm", version)
    decoding = "DraftTarget" if drafter is None else drafter.support(NAME).name
    config: dict[str, Any] = {
        "decoding_type": decoding_type(decoding, version)[0],
        **draft_length_keys(decoding, first),
    }
    if decoding in ("Eagle3", "Eagle"):
        config["speculative_model_dir"] = draft_model
    elif decoding in ("DraftTarget", "PARD", "DFlash", "DSpark"):
        # PARDDecodingConfig / DFlashDecodingConfig / DSparkDecodingConfig (1.3.0rc27, 1.4.0rc1 docs): max_draft_len and
        # speculative_model; mask_token_id and target_layer_ids are left to the checkpoint: TorchLlmArgs.
        # validate_speculative_config reads them from its config.json (llm_args.py at commit 0004396).
        config[draft_model_key(version)] = draft_model
    elif decoding == "NGram":
        config["max_matching_ngram_size"] = drafter.lookup[1]
    if version < SCHEDULE_SINCE:
        return config
    on = list(itertools.takewhile(lambda r: r.gamma > 0, ranges))
    if decoding in ONE_MODEL_SCHEDULE:
        lengths = [(r.end_batch, max(1, min(r.gamma, first))) for r in ranges]
        # One key per length: ranges that end at the same length (speculation off kept at 1) merge into the last.
        config["draft_len_schedule"] = {
            end: n for k, (end, n) in enumerate(lengths) if k + 1 == len(lengths) or lengths[k + 1][1] != n
        }
    elif len(on) < len(ranges):
        config["max_concurrency"] = on[-1].end_batch
    return config


def trtllm_notes(ranges: list, config: dict, version: tuple | None = None) -> list[str]:
    """What the config :func:`to_trtllm` wrote does at ``version``, and what it had to give up."""
    version = parse_version(NAME, NEWEST) if version is None else as_release(version)
    v = _version_text(version)
    first = ranges[0].gamma
    notes = []
    if config.get("decoding_type") in ("DraftTarget", "Draft_Target"):
        spelling_note = decoding_type("DraftTarget", version)[1]
        notes += [spelling_note] if spelling_note else []
    if "num_nextn_predict_layers" in config:
        notes.append(MTP_LENGTH_NOTE)
    if version < SCHEDULE_SINCE:
        return notes + [
            f"TensorRT-LLM {v}: specsim writes draft_len_schedule for {SCHEDULE_SINCE} and later (the one-model path "
            "took it in 1.3.0rc8, NVIDIA/TensorRT-LLM#10860; every algorithm after #12262; the two-model form of #8194 "
            "read its keys as lower bounds; 1.3.0rc3-rc7 not read): the batch-1 length is written for every batch"
        ]
    if any(r.gamma > first for r in ranges):
        notes.append(
            f"TensorRT-LLM wants max_draft_len at the smallest key to be the largest length: later lengths are "
            f"capped at the batch-1 length {first}"
        )
    if "draft_len_schedule" in config:
        ones = [r for r in ranges if r.gamma == 0]
        notes.append(
            "draft_len_schedule keys are the largest batch of each range (TensorRT-LLM uses the smallest key at or "
            f"above the batch, and 0 above the largest key, {ranges[-1].end_batch})"
        )
        if ones:
            notes.append(
                f"specsim has speculation off from batch {ones[0].start_batch}, written as length 1: a 0-length tier on "
                f"{config['decoding_type']}'s one-model path can silently collapse acceptance when the batch shrinks "
                "back (NVIDIA/TensorRT-LLM#16888, open); explain --gamma 1 shows what length 1 costs there"
            )
    elif "max_concurrency" in config:
        notes.append(
            f"{config['decoding_type']} keeps length {first} and stops speculating above max_concurrency "
            f"{config['max_concurrency']} (its two-model path; the one-model schedule is not its)"
        )
    return notes


def trtllm_options(dep, speculative_config: dict[str, Any]) -> dict[str, Any]:
    """The ``--extra_llm_api_options`` YAML: LlmArgs keys for the target's parallelism and KV dtype, then the
    ``speculative_config``."""
    out: dict[str, Any] = {}
    if dep.target.tp > 1:
        out["tensor_parallel_size"] = dep.target.tp
    if dep.target.kv_dtype == "fp8":
        out["kv_cache_config"] = {"dtype": "fp8"}
    out["speculative_config"] = speculative_config
    return out


#: The first release specsim writes a pinned acceptance for: the first image SemiAnalysis InferenceX pins
#: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS on (the release that first reads it was not found).
PIN_SINCE = Release("1.3.0rc14")


class TrtllmBench(BenchWriter):
    """TensorRT-LLM: ``trtllm-serve`` with an ``--extra_llm_api_options`` YAML, and its ``benchmark_serving`` client.

    No release wheel could be read here; read from the stored source of NVIDIA/TensorRT-LLM (commits named):
    ``tensorrt_llm/commands/serve.py`` (00209af1: ``trtllm-serve MODEL --backend pytorch --tp_size --port
    --max_batch_size --extra_llm_api_options FILE``), ``tensorrt_llm/llmapi/llm_args.py`` (00043967,
    2026 main: ``speculative_config`` with ``decoding_type`` Eagle3 / MTP / NGram / Draft_Target (the draft model's
    spelling by release: :data:`DRAFT_TARGET_SPELLINGS`), ``max_draft_len``, ``speculative_model`` (its alias
    ``speculative_model_dir`` is accepted, ``AliasChoices``); ``kv_cache_config.enable_block_reuse``),
    ``tensorrt_llm/_torch/speculative/interface.py`` (00b6d5a2: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` counts
    accepted *draft* tokens, so AL - 1 (PR #9608); fractional values only on the one-model path, PR #13569; the
    two-model path parses it with ``int()``), and
    ``tensorrt_llm/serve/scripts/benchmark_serving.py`` (0228a712: vLLM's client with ``--random-ids``; its result
    holds vLLM's keys and ``avg_decoded_tokens_per_iter``, the tokens per iteration).  The first release with the
    variable was not found: these plans are for 1.3 (InferenceX runs them on 1.3.0rc14-rc24 images).
    """

    name, newest = "trtllm", NEWEST
    metrics = "/prometheus/metrics"
    #: The plan's servers leave return_perf_metrics off, without which /prometheus/metrics has no speculative counters
    #: (:data:`METRIC_NAMES`; their first release is not pinned either).
    real_acceptance = "the tokens per iteration its client records (avg_decoded_tokens_per_iter; the servers export no speculative counters)"

    def check(self, version, drafter, pins, topk):
        if version < PIN_SINCE and any(p is not None for p in pins):
            raise ValueError(
                f"trtllm {_version_text(version)}: the release that first reads "
                "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS was not found; specsim writes pinned plans for "
                f"TensorRT-LLM {PIN_SINCE} and later (the 1.3.0rc14-rc24 images SemiAnalysis InferenceX pins it on), "
                f"or {given_as('pin=False', '--no-pin')}"  # design_plan's pin, bench-plan's --no-pin
            )
        support = drafter.support("trtllm", version)
        spelling_note = decoding_type(support.name, version)[1]
        notes = [spelling_note] if spelling_note else []
        notes += [MTP_LENGTH_NOTE] if "num_nextn_predict_layers" in draft_length_keys(support.name, 1) else []
        if not support.fractional_pin:  # the two-model path; one-model workers (Eagle3, MTP) take a fractional count
            for p in pins:
                if p is not None and p != int(p):
                    raise ValueError(
                        f"TensorRT-LLM's two-model path ({support.name}) reads "
                        "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS as a whole number (tensorrt_llm/_torch/"
                        f"pyexecutor/sampler.py); pin whole acceptance lengths "
                        f"({given_as('pinned', '--pin-accept-length')}), not {p:g}"  # design_plan's pinned
                    )
        return notes + [
            "the plan's servers leave return_perf_metrics off, without which TensorRT-LLM's /prometheus/metrics "
            "carries no speculative counters (tensorrt_llm/metrics/collector.py at 050f80d; their first release is "
            "not pinned): the real-acceptance run's length is its client's avg_decoded_tokens_per_iter"
        ]

    def server(self, plan, server):
        extra = {"kv_cache_config": {"enable_block_reuse": False}}
        env = {}
        if server.steps is not None:
            drafter = plan.drafter_type
            version = parse_version(NAME, plan.version)
            name = drafter.support("trtllm").name
            spec = {"decoding_type": decoding_type(name, version)[0], **draft_length_keys(name, server.steps)}
            if plan.draft_checkpoint:
                spec["speculative_model_dir"] = plan.draft_checkpoint
            if getattr(drafter, "lookup", None):
                spec["max_matching_ngram_size"] = drafter.lookup[1]
            extra["speculative_config"] = spec
            if server.pinned_accept_length is not None:
                env = {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": f"{server.pinned_accept_length - 1:g}"}
        import yaml

        name = f"extra-{server.key}.yml"
        cmd = [
            "trtllm-serve",
            plan.served_model,
            "--backend",
            "pytorch",
            "--tp_size",
            str(plan.tp),
            "--port",
            str(plan.port),
            "--max_batch_size",
            str(plan.max_concurrency),
            "--extra_llm_api_options",
            name,
        ]
        return env, cmd, {name: yaml.safe_dump(extra, sort_keys=False)}

    def client(self, plan, run, url):
        cmd = [
            "python",
            "-m",
            "tensorrt_llm.serve.scripts.benchmark_serving",
            "--backend",
            "openai",
            "--base-url",
            url,
            "--model",
            plan.served_model,
            "--num-prompts",
            str(run.num_prompts),
            "--max-concurrency",
            str(run.concurrency),
            "--request-rate",
            "inf",
            "--ignore-eos",
            "--save-result",
            "--result-dir",
            "results",
            "--result-filename",
            run.file.split("/", 1)[1],
        ]
        if run.input_tokens is None:
            cmd += ["--dataset-name", "sharegpt", "--dataset-path", "prompts.sharegpt.json"]
        else:
            cmd += [
                "--dataset-name",
                "random",
                "--random-ids",
                "--random-input-len",
                str(run.input_tokens),
                "--random-output-len",
                str(run.output_tokens),
                "--random-range-ratio",
                "0",
            ]
        return cmd

    def prompts_prep(self, plan):
        return [_SHAREGPT_PREP]


def render_schedule(
    ranges: list, dep, checkpoint: str | None, version: tuple, min_gain: float, max_batch: int
) -> tuple[str, list]:
    """(the --extra_llm_api_options YAML of ``ranges`` for TensorRT-LLM ``version``, and the notes that go with it)."""
    import yaml

    config = to_trtllm(ranges, checkpoint, dep, version)
    if config is None:
        return f"# speculation does not pay (gain >= {min_gain:g}) at batch 1: leave speculative_config unset", []
    text = yaml.safe_dump(trtllm_options(dep, config), sort_keys=False).rstrip()
    return text, [f"written for TensorRT-LLM {_version_text(version)}"] + trtllm_notes(ranges, config, version)


# -- the engine as one object -------------------------------------------------------------------------------------
#: Where TensorRT-LLM names its decoding types (each DecodingConfig's ``decoding_type``).
_TRT_ARGS = "tensorrt_llm/llmapi/llm_args.py"
#: The TensorRT-LLM source read for the 2026 drafters' names: llm_args.py of NVIDIA/TensorRT-LLM at this commit (no
#: release wheel was read, so the commit is not mapped to a release: the first release comes from the API docs).
_TRT_COMMIT = "0004396720054fd8e205cbf616f21f0b57c6b412"


def _trt(config: str, release: str) -> str:
    """Where a TensorRT-LLM decoding_type was read: the discriminator of its config class, and its first release."""
    return f"{config}.decoding_type in {_TRT_ARGS} at commit {_TRT_COMMIT[:8]}; release from {release}"


#: TensorRT-LLM's ``decoding_type`` for each drafter kind and the first release that takes it.  Its two-model paths
#: read a pinned acceptance as a whole number of tokens (``fractional_pin=False``); the one-model EAGLE-3 and MTP paths
#: take a fractional forced count.
METHODS = {
    "draft_model": EngineSupport("DraftTarget", (1, 0, 0), _TRT_ARGS, fractional_pin=False),
    "eagle3": EngineSupport("Eagle3", (1, 0, 0), _TRT_ARGS),
    "mtp": EngineSupport("MTP", (1, 0, 0), _TRT_ARGS),
    "ngram": EngineSupport("NGram", (1, 0, 0), _TRT_ARGS, fractional_pin=False),
    "pard": EngineSupport(
        "PARD",
        Release("1.3.0rc26"),
        _trt("PARDDecodingConfig", "the 1.3.0rc26 API reference, its Literal['PARD'] (PR #11438; no earlier one read)"),
        fractional_pin=False,
    ),
    "dflash": EngineSupport(
        "DFlash",
        Release("1.3.0rc27"),
        _trt("DFlashDecodingConfig", "the 1.3.0rc27 API docs (PR #12794; no earlier one read)"),
    ),
    "dspark": EngineSupport(
        "DSpark", Release("1.3.0rc27"), _trt("DSparkDecodingConfig", "the 1.3.0rc27 API docs (no earlier one read)")
    ),
}
#: Drafter kinds TensorRT-LLM does not take, and what was looked for.
UNSUPPORTED = {
    # EAGLE-1/2 runs on the TensorRT engine backend only, which specsim's preset does not model: on the PyTorch backend
    # "Eagle" gives EagleDecodingConfig, whose spec_dec_mode is EAGLE3_ONE_MODEL where eagle3_one_model (default True),
    # else EAGLE3 (tensorrt_llm/llmapi/llm_args.py, read in the gh-pages rendered source at 1.0.0, 1.1.0 and 1.2.0 by
    # dd155d48, and in three stored states of the file); from 1.3.0rc2 TorchLlmArgs turns "Eagle" into
    # Eagle3DecodingConfig.  No PyTorch mode runs an EAGLE-1/2 head.
    "eagle": (
        "on the PyTorch backend decoding_type Eagle runs an EAGLE-3 head (EagleDecodingConfig.spec_dec_mode: "
        "EAGLE3_ONE_MODEL or EAGLE3, tensorrt_llm/llmapi/llm_args.py 1.0.0-1.2.0; Eagle3DecodingConfig from 1.3.0rc2); "
        "EAGLE-1/2 runs on the TensorRT engine backend only, which specsim does not model"
    ),
    "peagle": "no P-EAGLE decoding config found",
    "suffix": "TensorRT-LLM's SADecodingConfig is a suffix automaton on the GPU, not suffix trees",
}


def _is_bench_file(record: dict) -> bool:
    """A result of TensorRT-LLM's benchmark_serving --save-result (vLLM's keys and ``avg_decoded_tokens_per_iter``)."""
    return "avg_decoded_tokens_per_iter" in record


def _per_batch_missing(dep, ranges: list, version: tuple) -> str | None:
    decoding = dep.drafter.support(NAME).name
    if version < SCHEDULE_SINCE:
        v = _version_text(version)
        return (
            f"TensorRT-LLM {v} takes no draft_len_schedule that specsim writes (from {SCHEDULE_SINCE}, "
            "NVIDIA/TensorRT-LLM#10860)"
        )
    if decoding not in ONE_MODEL_SCHEDULE:
        return (
            f"TensorRT-LLM's {decoding} decoding takes no draft_len_schedule (only {', '.join(ONE_MODEL_SCHEDULE)}); "
            "it stops speculating above max_concurrency instead"
        )
    return None


#: trtllm-serve's max_batch_size and max_num_tokens when not given: tensorrt_llm/commands/serve.py takes its click
#: defaults from BuildConfig's (2048 and 8192), and llmapi/llm_args.py BaseLlmArgs has the same, read at commit
#: 00209af1 of NVIDIA/TensorRT-LLM (no 1.x release wheel holds the code, so the release is not pinned).  Both arms
#: alike, on every GPU; the token budget counts each decoding request's 1 + draft tokens
#: (cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp).
_LIMITS = DefaultLimits(
    2048,
    8192,
    "TensorRT-LLM's trtllm-serve defaults: max_batch_size 2048, max_num_tokens 8192 (tensorrt_llm/commands/serve.py "
    "and llmapi/llm_args.py at 00209af1)",
)


#: KvCacheConfig.free_gpu_memory_fraction when not given ("Default is 90%", tensorrt_llm/llmapi/llm_args.py).
FREE_GPU_MEMORY_FRACTION = 0.9


def memory_share(hardware, model, draft, given: float | None) -> MemoryShare:
    """TensorRT-LLM's KV cache: free_gpu_memory_fraction of what the GPU's memory leaves after the profiling run, whose
    peak holds the weights of the target and of the drafter, (total - peak + the profiling run's own cache) x fraction
    (tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory, read at commit d8ae02c of
    NVIDIA/TensorRT-LLM; earlier code's cal_max_tokens the same).  As a share of the device: (W + f (M - W)) / M, W the
    weights held; the profiling run's activations are not counted (vLLM's are: specsim.engines.vllm.start_up)."""
    f = FREE_GPU_MEMORY_FRACTION if given is None else given
    m = hardware.memory_bytes
    w_plain = model.weight_bytes
    w_spec = w_plain + (draft.weight_bytes if draft is not None else 0.0)
    share = lambda w: min((w + f * max(m - w, 0.0)) / m, 1.0)  # noqa: E731  (weights past the GPU: no cache, no more)
    said = "as given" if given is not None else "its default"
    return MemoryShare(
        share(w_plain),
        share(w_spec),
        f"TensorRT-LLM's free_gpu_memory_fraction {f:g} ({said}) of the memory the weights leave "
        "(tensorrt_llm/_torch/pyexecutor/_util.py at d8ae02c; activations not counted)",
    )


#: How TensorRT-LLM holds its requests' KV cache by default: SchedulerConfig.capacity_scheduler_policy defaults to
#: GUARANTEED_NO_EVICT (tensorrt_llm/llmapi/llm_args.py SchedulerConfig, read in a stored copy of that file from
#: NVIDIA/TensorRT-LLM's 1.x line whose commit the index did not name; the 1.3.0 wheel is not on the package index
#: here, so 1.3.0 itself was not read), which admits a request only where the blocks of its whole length fit and never
#: pauses a started one; MAX_UTILIZATION (allocate as it goes, pause requests) is opt-in.
KV_POLICY = KvPolicy(
    where=(
        "TensorRT-LLM's default capacity_scheduler_policy GUARANTEED_NO_EVICT (tensorrt_llm/llmapi/llm_args.py "
        "SchedulerConfig): each request reserves the blocks of its whole length when admitted; nothing is evicted"
    )
)


class _Trtllm(Engine):
    def default_limits(self, preset, hardware, offline):
        return _LIMITS

    def kv_policy(self, preset, drafter):
        return KV_POLICY

    def memory_share(self, preset, hardware, model, draft, method, max_batched_tokens, given, max_num_seqs=None):
        return memory_share(hardware, model, draft, given)

    def draft_tp(self, preset, separate_model, target_tp, requested):
        return draft_tp(preset, separate_model, target_tp, requested)

    def settings(self, dep):
        from specsim.engines.vllm import engine_settings

        return engine_settings(dep, NAME)

    def render_schedule(self, ranges, dep, checkpoint, version, min_gain, max_batch):
        return render_schedule(ranges, dep, checkpoint, version, min_gain, max_batch)

    def per_batch_missing(self, dep, ranges, version):
        return _per_batch_missing(dep, ranges, version)

    def capped_rise(self, version, dep):
        one_model = dep.drafter is not None and dep.drafter.support(NAME).name in ONE_MODEL_SCHEDULE
        return CAPPED_RISE if as_release(version) >= SCHEDULE_SINCE and one_model else ""


ENGINE = _Trtllm(
    name=NAME,
    title="TensorRT-LLM",
    platforms=PLATFORMS,
    presets=tuple(PRESETS),
    ranges=tuple(RANGES),
    aliases=ALIASES,
    newest=NEWEST,
    metric_names=tuple(METRIC_NAMES),
    methods=METHODS,
    unsupported=UNSUPPORTED,
    method_key="decoding_type",
    serial_preset=None,
    own_draft_tp=False,
    takes_trees=False,
    # A decoding request whose 1 + draft tokens do not fit what is left of max_num_tokens is not scheduled, nor any after
    # it: MicroBatchScheduler::operator(), cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp at commit 0a949d31 of
    # NVIDIA/TensorRT-LLM (L277-282, counted in the stored text: reqNumTokens = getBeamWidthByIter() +
    # getNumDraftTokens(); "if (maxNumTokensRuntime && batchNumTokens + reqNumTokens > maxNumTokensRuntime.value())
    # break;"), the same branch in the three other stored versions of that file and in the PyTorch backend's
    # PyMicroBatchScheduler.schedule (tensorrt_llm/_torch/pyexecutor/scheduler.py at 034fffb0: "break" on
    # beam_width + req.num_draft_tokens over max_num_tokens).  No 1.x wheel could be read here, so the commits are not
    # mapped to a release (the preset's 1.0-1.3 rest on them); draft tokens are cut only from a prompt's last chunk
    # (fitDraftTokens), never from a decoding request's round.
    cuts_overflowing_round=False,
    bench=TrtllmBench(),
    bench_files=BenchFiles(
        describes="TensorRT-LLM benchmark_serving --save-result JSON (vLLM's keys and avg_decoded_tokens_per_iter)",
        # --backend of tensorrt_llm/serve/scripts/benchmark_serving.py that names a TensorRT-LLM server
        backends=("tensorrt-llm", "trt"),
        acceptance_key="avg_decoded_tokens_per_iter",
        decoded_per_iteration=True,
        recognises=_is_bench_file,
        precedence=0,
    ),
)
