"""Text output of the command line: tables, the deployment a table describes, notes and reasons.

Formatting only: every number here comes from a library function; this module
decides how it reads in a terminal (plain-text tables, milliseconds, one line
of provenance per step-time source) and how JSON is printed.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any, Sequence

__all__ = [
    "capacity_summary",
    "describe",
    "ms",
    "notes_in_json",
    "print_json",
    "print_notes",
    "progress",
    "short_bound",
    "table",
]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """Plain-text table; ``align`` holds one of '<' or '>' per column (default: text left, numbers right)."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if align is None:
        align = "".join(">" if rows and isinstance(rows[0][i], (int, float)) else "<" for i in range(len(headers)))
    fmt = "  ".join(f"{{:{a}{w}}}" for a, w in zip(align, widths))
    lines = [fmt.format(*headers), "  ".join("-" * w for w in widths)]
    lines += [fmt.format(*row) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


#: The answers :func:`notes_in_json` holds back while it gathers the notes said beside them (None: print at once).
_HELD: list | None = None


def print_json(obj: Any) -> None:
    if _HELD is not None:
        _HELD.append(obj)
        return
    print(json.dumps(obj, indent=2, allow_nan=False))


class _Said:
    """stderr as it is, and the ``note:``/``warning:`` lines written to it kept (a warning keeps its word)."""

    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, text: str) -> int:
        self.text.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def notes(self) -> list[str]:
        lines = "".join(self.text).splitlines()
        return [line.removeprefix("note: ") for line in lines if line.startswith(("note: ", "warning: "))]


@contextlib.contextmanager
def notes_in_json():
    """An answer's ``--json`` with the notes its text says on stderr, as ``notes`` in the answer (in each row where it
    is a list of rows; beside the notes it already carries, in order, each once): what a program reading the JSON
    would otherwise not see (an assumption, a default taken, a queue).  The JSON is printed when the command ends, and
    not at all where it fails: nothing half-written.  stderr is written as it is."""
    global _HELD
    said = _Said(sys.stderr)
    _HELD = []
    try:
        with contextlib.redirect_stderr(said):
            yield
        held, _HELD = _HELD, None
        notes = said.notes()
        for obj in held:
            for answer in obj if isinstance(obj, list) else [obj]:
                if isinstance(answer, dict):
                    answer["notes"] = list(dict.fromkeys([*answer.get("notes", []), *notes]))
            print_json(obj)
    finally:
        _HELD = None


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def short_bound(bound: str) -> str:
    return {"memory": "mem", "compute": "comp"}[bound]


#: Print every provenance line (-v/--verbose) rather than the one-line summary; set by the command line.
VERBOSE = False


def on_gpus(dep) -> str:
    """The GPUs a deployment's headers name: ``h100-sxm``, or ``h100-sxm x 4 GPUs`` at tensor parallelism."""
    return dep.hardware.name + (f" x {dep.target.tp} GPUs" if dep.target.tp > 1 else "")


def describe(dep, context: int) -> str:
    t, d = dep.target, dep.draft
    drafter = d.describe() if d is not None else f"{getattr(dep.drafter, 'label', 'no drafter')} (no network)"
    head = f"target {t.describe()} + draft {drafter} on {on_gpus(dep)}; context {context} tokens"
    head += _context_said(getattr(context, "basis", None)) + "\n"
    return head + step_sources(dep)


def step_sources(dep) -> str:
    """Where a deployment's step times come from, as a header says it: one line, every source with -v (a line each)."""
    if not VERBOSE:
        return dep.brief()
    return "\n".join(f"step times: {line}" if i == 0 else line for i, line in enumerate(dep.provenance()))


def _context_said(basis: str | None) -> str:
    """Where a --context not given comes from, as a header says it ("" where it was given)."""
    return "" if basis is None else f" ({basis}; --context to set)"


def print_notes(dep, more: list | tuple = ()) -> None:
    """What the step-time source could not answer from its own data, and the command's ``more``, on stderr."""
    for note in [*dep.notes(), *more]:
        print(f"note: {note}", file=sys.stderr)


def capacity_summary(cap, dep, basis: str | None = None) -> list[str]:
    """The capacity's lines; ``basis``: where the context comes from, where the user did not give it."""
    from specsim.serving.capacity import fitting_tp_for, kv_error_said

    gb = 1e9
    per = " per GPU" if cap.gpus > 1 else ""
    spec = cap.speculating_usable_bytes  # said where the speculating engine's share differs by 0.05 GB or more
    speculating = (
        f" ({spec / gb:.1f} GB speculating)" if spec is not None and abs(spec - cap.usable_bytes) >= 0.05 * gb else ""
    )
    where = f"{dep.hardware.name} x {cap.gpus}" if cap.gpus > 1 else dep.hardware.name
    # The share as set, and what the engine's start-up takes out of it where specsim counts that apart (vLLM's).
    start = cap.start_up_bytes or 0.0
    share = (cap.usable_bytes + start) / cap.memory_bytes
    usable = f"{share:.3g} usable = {cap.usable_bytes / gb:.1f} GB"
    if start:
        usable = (
            f"{share:.3g} = {(cap.usable_bytes + start) / gb:.1f} GB, less {start / gb:.2f} GB start-up = "
            f"{cap.usable_bytes / gb:.1f} GB usable"
        )
    # MB where a short context's KV would print as 0.000 GB
    unit, scale = ("GB", gb) if cap.target_kv_bytes_per_seq >= 0.01 * gb else ("MB", gb / 1e3)
    kv_per_seq = f"{cap.target_kv_bytes_per_seq / scale:.3f} + {cap.draft_kv_bytes_per_seq / scale:.3f} {unit}"
    lines = [
        f"memory{per}: {cap.memory_bytes / gb:.1f} GB ({cap.memory_bytes / 2**30:.1f} GiB) x {usable}{speculating}; "
        f"weights {dep.target.name} {cap.target_weight_bytes / gb:.1f} GB + {dep.drafter.name} {cap.draft_weight_bytes / gb:.1f} GB"
        + (" (draft whole on one GPU)" if cap.gpus > 1 and dep.draft is not None and dep.draft.tp == 1 else "")
        + "; "
        f"KV per sequence at {cap.context_tokens} token{'s' if cap.context_tokens != 1 else ''} {kv_per_seq}"
    ]
    lines.append(
        f"usable: {cap.memory_basis}"
        + ("; --memory-util for your engine's setting" if cap.memory_utilization is None else "")
    )
    lines.append(f"KV cache: {kv_error_said(dep.engine.name)}")
    if cap.recurrent_state_bytes_per_seq:  # a hybrid target: say what the recurrent layers hold, and the scratch
        lines.append(
            f"recurrent state: {cap.recurrent_state_bytes_per_seq / gb:.3f} GB per sequence of the target's; a "
            f"speculating sequence also holds {cap.scratch_bytes_per_seq / gb:.3f} GB of scratch, one state per "
            f"drafted token for gamma = {cap.scratch_draft_tokens} ({cap.scratch_basis}; counted with the draft's: the "
            "engine checkpoints the state per drafted token)"
        )
    if not cap.both_fit:
        what = "does not fit" if not cap.target_fits else "fits but not with the draft beside it"
        lines.append(
            f"{dep.target.name} {what} on {where} in {dep.target.weight_dtype}: weights "
            f"{cap.target_weight_bytes / gb:.1f} + {cap.draft_weight_bytes / gb:.1f} GB against the usable "
            f"{cap.usable_bytes / gb:.1f} GB{per}{speculating}"
        )
        n = fitting_tp_for(dep, cap)
        lines.append(
            f"smallest tensor parallelism that fits with the draft and one sequence: --tp {n}"
            if n is not None
            else f"no tensor-parallel size within one {dep.hardware.name} node ({dep.hardware.max_devices} GPUs) fits; "
            "use a smaller dtype (--weight-dtype fp8 or int4) or a larger device"
        )
    else:
        lines.append(
            f"max batch at {cap.context_tokens} tokens per sequence"
            + _context_said(basis)
            + f": {cap.max_batch_without_draft} without the draft, "
            f"{cap.max_batch_with_draft} with it"
            + (
                f" (in memory; the engine's max_num_seqs {cap.max_num_seqs} runs at most that many)"
                if cap.max_num_seqs is not None and cap.max_num_seqs < cap.max_batch_without_draft
                else ""
            )
        )
    return lines


@contextlib.contextmanager
def progress_bar(desc: str, unit: str, total: int | None = None, quiet: bool = False):
    """A progress bar on stderr (tqdm) for work that runs over a few seconds, shown only where stderr is a terminal and
    not ``quiet`` (JSON output); yields the callback to call per finished ``unit`` (None where none is shown)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    # Every unit is drawn (its units are whole fits, runs or figures, seconds apart): none is lost to tqdm's 0.1 s
    # rate limit, so what is shown does not depend on how fast the machine is.
    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, mininterval=0, miniters=1)
    try:
        yield lambda: bar.update()
    finally:
        bar.close()


def progress(line: str) -> None:
    # One write per line: serve-sim's worker processes share the stream, and print's two writes interleave there.
    sys.stderr.write(f"specsim: {line}\n")
    sys.stderr.flush()
