"""How an error names what its caller gave: the library's keyword argument (``max_context``) to a Python caller, the
command's flag (``--max-context``) inside the command line.  One message, built once, takes the name from
:func:`given_as`; the command line runs each command inside :func:`as_flags` (:func:`specsim.cli.main.main`), and a
library function that passes its caller's argument on under another name runs the call inside :func:`passed_as`
(``calibrate_engine``'s ``draft_tp`` is ``Deployment.build``'s ``draft_options['tp']``)."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

__all__ = ["FLAGS", "as_flags", "draft_option", "given_as", "keyword_and_flag", "passed_as", "read_from"]

#: The keyword arguments whose flag is not the keyword with dashes: a load's request lengths, as ``vllm bench serve``'s
#: ``--random-input-len`` and ``--random-output-len`` name them, the n-gram scan's cost, which the flag gives in ns, and
#: the engine's share of memory (every command's ``--memory-util``, specsim.cli.flags), and the target's MoE routing
#: options, ``Deployment.build``'s ``target_options`` (specsim.cli.args.model_options).
FLAGS = {
    "input_tokens": "--input-len",
    "output_tokens": "--output-len",
    "ngram_cpu_s_per_token": "--ngram-cpu-ns",
    "memory_utilization": "--memory-util",
    "target_options['routing_effective_experts']": "--moe-effective-experts",
    "target_options['routing_correlation']": "--moe-routing-correlation",
}

_AS_FLAGS = contextvars.ContextVar("specsim_as_flags", default=False)
_PASSED_AS = contextvars.ContextVar("specsim_passed_as", default={})
_READ_FROM = contextvars.ContextVar("specsim_read_from", default={})


def given_as(keyword: str, flag: str | None = None) -> str:
    """``keyword``, a library function's keyword argument, as its caller gave it: itself, or inside :func:`as_flags`
    the command line's flag for it: ``flag`` where the one command that reaches the function names it otherwise
    (``save_watch``'s ``path`` is ``watch --plot``), else :data:`FLAGS`' or the keyword with dashes; inside
    :func:`passed_as`, outside :func:`as_flags`, the keyword the caller passed it as; inside :func:`read_from`, the
    file's key it was read from, flags or not.

    >>> given_as("max_context")
    'max_context'
    >>> with as_flags():
    ...     given_as("max_context"), given_as("input_tokens")
    ('--max-context', '--input-len')
    >>> with as_flags():
    ...     given_as("path", "--plot")
    '--plot'
    """
    passed, read = _PASSED_AS.get().get(keyword, keyword), _READ_FROM.get()
    if passed in read:
        return read[passed]
    if not _AS_FLAGS.get():
        return passed
    if flag is not None:
        return flag
    return FLAGS.get(keyword, "--" + keyword.replace("_", "-"))


def draft_option(key: str) -> str:
    """A draft model's option ``key`` as its caller gave it: an entry of ``draft_options``, as
    :meth:`specsim.speculation.deployment.Deployment.build` takes it, or the command line's ``--draft-`` flag for it.

    >>> draft_option("tp")
    "draft_options['tp']"
    >>> with as_flags():
    ...     draft_option("weight_dtype")
    '--draft-weight-dtype'
    """
    return given_as(f"draft_options['{key}']", "--draft-" + key.replace("_", "-"))


def keyword_and_flag(keyword: str, flag: str | None = None) -> str:
    """``keyword`` as a text that outlives the call names it: both, the library's keyword (as :func:`given_as` names it
    to a Python caller) and the command line's flag, whatever the caller.  A calibration file's notes and warnings are
    read later by library and command-line users alike, and calibrate_engine and ``calibrate-engine`` write the same
    file (tests/test_library.py::test_calibrate_engine); a value read from a file (:func:`read_from`) is named by its key.

    >>> keyword_and_flag("prefix_hit"), keyword_and_flag("memory_utilization")
    ('prefix_hit / --prefix-hit', 'memory_utilization / --memory-util')
    >>> with as_flags():
    ...     keyword_and_flag("spec_groups", "--spec")
    'spec_groups / --spec'
    >>> with read_from({"engine": "plan.yaml's engine"}):
    ...     keyword_and_flag("engine")
    "plan.yaml's engine"
    """
    token = _AS_FLAGS.set(False)
    try:
        said = given_as(keyword)
    finally:
        _AS_FLAGS.reset(token)
    with as_flags():
        flagged = given_as(keyword, flag)
    return said if flagged == said else f"{said} / {flagged}"  # one name where both are a file's key (read_from)


@contextlib.contextmanager
def passed_as(names: dict[str, str]) -> Iterator[None]:
    """Within it, :func:`given_as` names each keyword of ``names`` as the caller's keyword it maps to: a library
    function that passes its caller's argument on under another name (``calibrate_engine(draft_tp=1)`` builds its
    deployment with ``draft_options={'tp': 1}``) runs that call inside it, so that an error names what its caller
    gave.  The command line's flags win over it (:func:`as_flags`).

    >>> with passed_as({"draft_options['tp']": "draft_tp"}):
    ...     draft_option("tp"), given_as("max_context")
    ('draft_tp', 'max_context')
    >>> with passed_as({"draft_options['tp']": "draft_tp"}), as_flags():
    ...     draft_option("tp")
    '--draft-tp'
    """
    with _added(_PASSED_AS, names):
        yield


@contextlib.contextmanager
def read_from(names: dict[str, str]) -> Iterator[None]:
    """Within it, :func:`given_as` names each keyword of ``names`` as where its value was read, a file's key
    (``"plan.yaml's draft_tp"``), on the command line too: a value a command read from a file was given by no flag
    (``calibrate-engine --plan`` passes the plan's ``tp`` and ``draft_tp`` on as ``calibrate_engine``'s, and a refusal
    of them said ``drop --draft-tp``, a flag calibrate-engine does not have).  A keyword passed on under another name
    (:func:`passed_as`) is looked up by the name its caller gave.

    >>> with as_flags(), read_from({"draft_tp": "plan.yaml's draft_tp"}):
    ...     given_as("draft_tp"), given_as("max_context")
    ("plan.yaml's draft_tp", '--max-context')
    >>> with read_from({"draft_tp": "plan.yaml's draft_tp"}), passed_as({"draft_options['tp']": "draft_tp"}):
    ...     draft_option("tp")
    "plan.yaml's draft_tp"
    """
    with _added(_READ_FROM, names):
        yield


@contextlib.contextmanager
def _added(var: contextvars.ContextVar, names: dict[str, str]) -> Iterator[None]:
    """Within it, ``var``'s mapping holds ``names`` too (:func:`passed_as`, :func:`read_from`)."""
    token = var.set(var.get() | names)
    try:
        yield
    finally:
        var.reset(token)


@contextlib.contextmanager
def as_flags() -> Iterator[None]:
    """Within it, :func:`given_as` names flags: the command line runs a command inside it."""
    token = _AS_FLAGS.set(True)
    try:
        yield
    finally:
        _AS_FLAGS.reset(token)
