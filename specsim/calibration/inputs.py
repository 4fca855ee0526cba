"""The runs of a calibration from what the user has: a bench-plan folder's results, or benchmark files with the drafter
and draft steps they ran, grouped into sweeps (:func:`specsim.calibration.runs.group_sweeps`).

What ``calibrate-engine`` reads, as library calls: a notebook builds the same runs and gets the same fit.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from specsim.calibration.runs import CalRun, SpecSetup, group_sweeps, with_prompt_spreads
from specsim.core.names import given_as
from specsim.core.words import counted

__all__ = ["runs_engine", "runs_from_files", "runs_from_plan", "served_target"]

#: Who gave a plan's runs the acceptance their files record none of (BenchRun.accept_length_page): each run's pages
#: saved before and after it, the counters between them.
PLAN_PAGES = "the /metrics pages saved before and after each"


def _written(root: Path, row: dict, key: str) -> bool:
    """Whether the plan row's ``key`` (its result or a metrics page) has been written: a regular file; False where it
    is not given or does not exist yet (the run is still to come); a path that exists and is no file is refused, naming
    the row, as a wrong path and not a run still to come."""
    if not row.get(key):
        return False
    path = root / row[key]
    if path.is_file():
        return True
    if path.exists():
        raise ValueError(f"plan run {row['name']}: its {key} {path} is not a file: the run writes one there")
    return False


def runs_from_plan(plan_path: str) -> tuple[dict, list[CalRun], list[str], list[str]]:
    """(plan, runs, files read, notes) of a bench-plan folder's results.  A run whose file records another load than the
    plan ran it at is refused; runs with no result yet are left out and said so (a plan whose speculative runs have none
    fits the plain terms alone, the round's held at the preset)."""
    from specsim.calibration.bench_files import read_alike
    from specsim.calibration.plan import read_plan
    from specsim.speculation.metrics import acceptance_between

    plan = read_plan(plan_path)
    root = Path(plan_path).parent
    runs, files, missing = [], [], []
    for row in plan["runs"]:
        if _written(root, row, "file"):
            _check_load(root / row["file"], row["concurrency"])
    present = [root / r["file"] for r in plan["runs"] if _written(root, r, "file")]
    read_runs, said = read_alike(present)
    by_path = dict(zip(present, read_runs))
    for row in plan["runs"]:
        path = root / row["file"]
        if not _written(root, row, "file"):
            missing.append(row)
            continue
        read = by_path[path]
        if len(read) != 1:
            raise ValueError(f"{path.name}: a plan's result holds one run, this file {len(read)}")
        run = read[0]
        _check_lengths(path, run, row)
        files.append(str(path))
        setup = None
        if row["kind"] == "spec":
            if run.accept_length is None and _written(root, row, "metrics_after"):
                before = root / row["metrics_before"] if _written(root, row, "metrics_before") else None
                m = acceptance_between(before, root / row["metrics_after"])
                # the pages' per-position shares too, as --metrics gives them (one position a draft step, checked)
                shares = tuple(float(c) for c in m.cumulative_rates) if m.accepted_per_position else None
                page = f"plan run {row['name']}: its metrics_after {Path(row['metrics_after']).name}"
                _check_page_steps(page, shares, int(row["steps"]), 1, f"the plan's {row['steps']} draft steps")
                run = dataclasses.replace(
                    run,
                    accept_length=m.mean_acceptance_length,
                    accept_length_page=PLAN_PAGES,
                    per_position=run.per_position if shares is None else shares,
                )
            setup = SpecSetup(
                int(row["steps"]),
                pinned_accept_length=row.get("pinned_accept_length"),
                sweep=row["name"].rsplit("-c", 1)[0],
                steps_from=f"the plan's row {row['name']}",
            )
        runs.append(CalRun(run, setup))
    if not runs:
        raise ValueError(f"{plan_path}: none of its {len(plan['runs'])} result files exists yet: run its run.sh first")
    notes = [said] if said else []
    if missing:
        spec_missing = sum(r["kind"] == "spec" for r in missing)
        notes.append(
            f"{len(missing)} of the plan's {len(plan['runs'])} runs have no result yet (the first: {missing[0]['file']}"
            f"; {spec_missing} speculative): fitted without them"
        )
    return plan, runs, files, notes


def _check_lengths(path: Path, run, row: dict) -> None:
    """Refuse a plan's result whose mean prompt or output is not the plan's row's (within
    :data:`~specsim.calibration.runs.SAME_LENGTHS`, as :func:`~specsim.calibration.runs.alike` judges one dataset):
    a result of another run, fitted at lengths the plan did not run."""
    from specsim.calibration.runs import SAME_LENGTHS, alike

    if row.get("input_tokens") is None or row.get("output_tokens") is None:
        return  # the runs on the user's prompts: their lengths are the prompts'
    if not alike(run.prompt_tokens, run.output_tokens, row["input_tokens"], row["output_tokens"]):
        raise ValueError(
            f"{path.name}: the plan ran it at {row['input_tokens']} tokens in, {row['output_tokens']} out, but the "
            f"file's means are {run.prompt_tokens:,.0f} in, {run.output_tokens:,.0f} out (more than "
            f"{SAME_LENGTHS:.0%} apart): the result is not of this run (rerun it, or correct the plan's row)"
        )


def _check_load(path: Path, concurrency: int) -> None:
    """Refuse a plan's result that records another concurrency than the plan ran it at (before anything else in it is
    judged: that is what is wrong with it)."""
    import json

    from specsim.core.files import read_text

    try:
        recorded = json.loads(read_text(path, "benchmark file").splitlines()[0]).get("max_concurrency")
    except (ValueError, IndexError, AttributeError, OSError):
        return  # the reader says what is wrong with the file
    if recorded is not None and recorded != concurrency:
        raise ValueError(
            f"{path.name}: the plan ran it at concurrency {concurrency} but the file records concurrency "
            f"{recorded}: the result is not of this run (rerun it, or correct the plan's row)"
        )


def runs_from_files(
    plain: list[str],
    spec_groups: list[tuple[list[str], int]],
    *,
    topk: int = 1,
    verify_tokens: int | None = None,
    metrics: str | None = None,
    sweep_by: str = "lengths",
    acceptance_spread: float | None = None,
) -> tuple[list[CalRun], list[str], list[str]]:
    """(runs, files read, notes) of plain benchmark files and groups of speculative ones, each group with the draft steps
    it ran (``[(files, steps), ...]``), grouped into sweeps by ``sweep_by``.  A saved ``/metrics`` page gives the
    acceptance length of speculative runs whose file records none, and is not read where every file records one.  ``acceptance_spread``: the standard deviation of
    the acceptance rate across the prompts (None: the one the files' single-request runs record, else 0; said in a
    note where an offline batch is among the runs, whose slowest request waits for it)."""
    import os

    from specsim.calibration.bench_files import read_alike
    from specsim.core.limits import MAX_GAMMA, check_int
    from specsim.speculation.metrics import accept_length_from_page, per_position_from_page

    one = (str, bytes, os.PathLike)
    if isinstance(plain, one) or any(isinstance(g[0], one) for g in spec_groups):
        raise ValueError("plain and each speculative group's files are lists of paths, not one path")
    spec_groups = [(paths, check_int("a speculative group's draft steps", s, 1, MAX_GAMMA)) for paths, s in spec_groups]
    _refuse_plain_as_spec(plain, [p for paths, _ in spec_groups for p in paths])
    read_runs, said_statistic = read_alike(list(plain) + [p for paths, _ in spec_groups for p in paths])
    read = iter(read_runs)  # each file's runs, in the order given
    runs, notes = [], [said_statistic] if said_statistic else []
    for path in plain:
        runs += [CalRun(r) for r in next(read)]
    length = shares = None
    # the page is read for an acceptance only where a speculative run's file records none (it may be given for the
    # prefix-cache share alone: calibrate-engine reads that, and refuses a page used for neither)
    if metrics and any(r.accept_length is None for file_runs in read_runs[len(plain) :] for r in file_runs):
        length, where = accept_length_from_page(metrics)
        shares = per_position_from_page(metrics)
    filled = 0  # speculative runs that take the page's length
    files = list(plain)
    for paths, steps in spec_groups:
        if verify_tokens is not None and topk <= 1 and verify_tokens < steps + 1:
            # A chain verifies its steps and the target's own token (SGLang sets steps + 1 itself at topk 1); a tree
            # (topk > 1) is bounded above only, and may verify fewer than its depth plus one.
            raise ValueError(
                f"{given_as('verify_tokens')} {verify_tokens} is fewer than {given_as('steps')} {steps} plus the "
                f"target's own token: a chain ({given_as('topk')} 1) verifies {steps + 1}"
            )
        setup = SpecSetup(steps, topk, verify_tokens)
        for path in paths:
            files.append(path)
            for r in next(read):
                if r.accept_length is None and length is not None:
                    page, said = f"{given_as('metrics')} {os.path.basename(metrics)}", f"{given_as('steps')} {steps}"
                    _check_page_steps(page, shares, steps, topk, said)
                    # the page's per-position shares: a chain's, one position a draft step (checked above)
                    per = shares if shares is not None and topk <= 1 else r.per_position
                    r = dataclasses.replace(
                        r, accept_length=length, accept_length_page=os.path.basename(metrics), per_position=per
                    )
                    filled += 1
                runs.append(CalRun(r, setup))
    if length is not None:
        notes.append(
            f"acceptance length of the {counted(filled, 'speculative run')} whose file has none: {length:.3f} ({where})"
        )
    _refuse_repeated_runs(runs)
    short = [f"{c.run.where}: {c.run.failed} of {c.run.completed + c.run.failed}" for c in runs if c.run.failed]
    if short:  # the tool's figures are of the completed requests; a failed one left its user's slot early
        notes.append(
            "requests that did not complete (sent less completed: vLLM's num_prompts - completed, GuideLLM's "
            f"request_totals errored + incomplete): {'; '.join(short)}: "
            "their runs' figures are the completed requests', and a request that failed (a timeout, a prompt past the "
            "model's length) left its place early, which the serving model the fit uses does not know"
        )
    runs, lines = group_sweeps(runs, sweep_by)
    runs, said = with_prompt_spreads(runs, acceptance_spread)
    return runs, files, notes + lines + said


def _check_page_steps(page: str, shares: tuple | None, steps: int, topk: int, steps_said: str) -> None:
    """Refuse a /metrics page (``page``: how the error names it) of another number of draft steps than the runs it
    gives its acceptance length (``steps_said``: where those steps were given): vLLM counts one position a configured
    draft token (num_speculative_tokens, vllm:spec_decode_num_accepted_tokens_per_pos), so a page of K positions measured
    drafts of K."""
    if shares is not None and topk <= 1 and len(shares) != steps:
        raise ValueError(
            f"{page} counts {len(shares)} draft positions (vllm:spec_decode_num_accepted_tokens_per_pos), the runs it "
            f"would give its acceptance length are at {steps_said}: save the page of the server that ran them"
        )


def _refuse_plain_as_spec(plain: list[str], spec: list[str]) -> None:
    """Refuse a file given as plain and speculative runs at once, or two such files with the same bytes: the same runs
    cannot be a server without a drafter and one with it, and fitted so they give a meaningless acceptance."""
    from pathlib import Path

    from specsim.core.limits import MAX_JSON_BYTES

    def size(path: str) -> int | None:
        try:
            return Path(path).stat().st_size
        except OSError:  # missing or unreadable: read_bench_file names it
            return None

    def same_bytes(a: str, b: str) -> bool:  # read only files of one size within the benchmark-file limit
        n = size(a)
        return n is not None and n == size(b) and n <= MAX_JSON_BYTES and Path(a).read_bytes() == Path(b).read_bytes()

    for path in spec:
        same = next((p for p in plain if Path(p).resolve() == Path(path).resolve()), None)
        if same is None:
            same = next((p for p in plain if same_bytes(p, path)), None)
        if same is not None:
            raise ValueError(
                f"{path} holds the same runs as the plain file {same}: speculative runs come from the server with the "
                f"drafter ({given_as('spec_groups', '--spec')}), plain ones from the server without it ({given_as('plain')})"
            )
    # A file given twice (by two names, or as a copy) would count its runs twice and weigh the fit toward them.
    for group in (plain, spec):
        for i, path in enumerate(group):
            same = next(
                (p for p in group[:i] if Path(p).resolve() == Path(path).resolve() or same_bytes(p, path)), None
            )
            if same is not None:
                raise ValueError(f"{path} holds the same runs as {same}, given before it: give each file once")


def _refuse_repeated_runs(runs: list) -> None:
    """Refuse a run of several requests recorded twice, every figure the same (a line copied within a file or into
    another): two such measurements do not agree in every figure, and the fit would count one run twice.  A run of one
    request can (the H100 study's humaneval prompts 11 and 18, one at a time, 130 in and 128 out in 850.3 ms each)."""
    seen = {}
    for c in runs:
        r = c.run
        if r.completed < 2:
            continue
        key = (r.kind, r.load, r.completed, r.tpot_s, r.ttft_s, r.e2e_s, r.duration_s, r.output_tokens_per_s)
        key += (r.prompt_tokens, r.output_tokens, r.accept_length, c.setup)
        if key in seen:
            first = seen[key]
            raise ValueError(
                f"{r.path} run {r.index} repeats {first.path} run {first.index} figure for figure: give each run once"
            )
        seen[key] = r


def served_target(given: str | None, runs: list[CalRun]) -> str:
    """The target the runs served: ``given`` (a built-in name or a config.json), or the model the files name; refused
    where the two disagree or neither is known.  A ``model_id`` that is a local folder (vLLM records the path it
    served) is taken for ``given``'s model when its last part names it."""
    from specsim.calibration.runs import check_one_model, model_key
    from specsim.describe.models import get_model

    check_one_model(runs)
    named = sorted({c.run.model for c in runs if c.run.model})
    if given is None:
        if not named:
            raise ValueError(f"the benchmark files name no model: pass {given_as('target')}")
        try:
            get_model(named[0])
        except KeyError:
            raise ValueError(
                f"the files name {named[0]!r}, which specsim does not ship: pass {given_as('target')} with its "
                "config.json"
            ) from None
        return named[0]
    if named:
        mine = get_model(given)
        keys = {model_key(n) for n in named}
        try:
            theirs = get_model(named[0]).name
        except KeyError:
            return given  # a checkpoint specsim does not know (or a local folder): --target says what it is
        if theirs != mine.name and model_key(mine.source or mine.name) not in keys:
            raise ValueError(f"{given_as('target')} {given} but the benchmark files ran {named[0]}")
    return given


def runs_engine(runs: list[CalRun], given: str | None = None) -> tuple[str, str | None]:
    """(engine, what was taken for it): ``given``, else the backend the files name where they name one engine, else
    specsim's default engine, at its current release (said, with how to name the release that served the runs)."""
    from specsim.engines import DEFAULT_ENGINE, REGISTRY

    servers = sorted({c.run.server for c in runs if c.run.server in REGISTRY})
    # The backends that name a server's own API (SGLang's /generate) over those that name an OpenAI-compatible client
    # any server answers (vllm bench serve's "vllm"): files of both are one server's, the former's.
    named = sorted({c.run.server for c in runs if c.run.server in REGISTRY and not c.run.server_hinted}) or servers
    if given is not None:
        name = getattr(given, "name", None) or str(given).split("@")[0]  # a preset, or its spec
        if servers and REGISTRY.get(name) is not None and servers != [name]:
            # A benchmark client's backend names the API it spoke, which another server can answer: said, not refused.
            hinted = sorted({c.run.server for c in runs if c.run.server_hinted and c.run.server in REGISTRY})
            several = len(servers) > 1
            return given, (
                f"fitted as {given_as('engine')} {name}, as given, though the files name their backend{'s' if several else ''} "
                + ", ".join(servers)
                + (f" ({', '.join(hinted)}: an OpenAI-compatible client, which any server answers)" if several else "")
                + f": check that {'one' if several else 'a'} {name} server ran them{' all' if several else ''}"
            )
        return given, None
    engine = named[0] if len(named) == 1 else DEFAULT_ENGINE
    return engine, (
        f"engine {engine}, its current release: "
        + ("the files' backend" if servers else "the default")
        + f" (give {given_as('engine')} {engine}@VERSION for the version that served the runs)"
    )
