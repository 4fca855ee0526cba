"""``--executor``: where a command's independent simulations run, named on the command line.

serve-sim's runs and serve-sweep's rates are independent jobs that the library hands to any
:class:`concurrent.futures.Executor` (:func:`specsim.serving.simulator.serve_compare_runs`,
:func:`~specsim.serving.simulator.serve_sweep`).  Each job carries its whole deployment and its seed, so its numbers
do not depend on where it runs, and the command prints the same bytes on a cluster as in a process pool.  This module
is the one place that reads the flag and builds the executor it names:

* ``dask``: a Dask ``LocalCluster`` on this machine (one single-threaded worker process per core, at most one per
  job), through ``Client.get_executor()``;
* ``dask://HOST[:PORT]``: the Dask scheduler there (port 8786, dask's default, unless given);
* ``ray``: Ray, in the cluster ``RAY_ADDRESS`` names or one ``ray.init()`` starts on this machine;
* ``ray://HOST[:PORT]``: a Ray cluster's client server (port 10001, Ray's default, unless given).

Neither is a dependency: Dask comes with the ``cluster`` extra (``pip install 'specsim-llm[cluster]'``), Ray is
optional and outside the test suite (not installed where specsim is tested; run by hand with Ray 2.60.0, docs/cluster.md).  A missing package, an address that does not
resolve, refuses or does not answer within :data:`CONNECT_TIMEOUT_S`, a server there that is not a Dask scheduler, a
scheduler with no workers, and a worker without specsim each give one line and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from concurrent.futures import Executor, Future
from typing import Callable, Iterator

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_PORTS",
    "CommandExecutor",
    "ExecutorSpec",
    "RayExecutor",
    "add_executor_arg",
    "executor_type",
    "open_executor",
    "usable_cores",
]

#: Seconds to wait for a cluster's address to accept a connection and answer as one, and for a Dask scheduler to
#: have a worker: a wrong address fails within this, instead of hanging the command.
CONNECT_TIMEOUT_S = 10.0
#: The port each kind listens on unless the address names one: dask-scheduler's --port and Ray Client's server.
DEFAULT_PORTS = {"dask": 8786, "ray": 10001}
FORMS = "dask, dask://HOST[:PORT], ray or ray://HOST[:PORT]"
DASK_MISSING = "--executor {spec} needs dask[distributed]: pip install 'specsim-llm[cluster]'"
RAY_MISSING = "--executor {spec} needs Ray (optional, not installed with specsim): pip install 'ray[client]'"
#: Ray's client server answered and did not let the client in.  From Ray 2.59 a local cluster asks for a token by
#: default (docs.ray.io, "Ray token authentication"): the server logs "Authentication required but no authorization
#: header provided" and the client times out.  Seen with Ray 2.60.0 and `ray start --head` on this machine.
RAY_REFUSED = (
    "--executor {spec}: Ray's client server did not take the connection ({err}); a cluster of Ray 2.59 or later asks "
    "for its token by default: run with RAY_AUTH_MODE=token (the token is read from RAY_AUTH_TOKEN or "
    "~/.ray/auth_token)"
)


@dataclasses.dataclass(frozen=True, slots=True)
class ExecutorSpec:
    """What ``--executor`` names: ``kind`` (``"dask"`` or ``"ray"``) and the cluster's ``host`` and ``port``, both
    None for one on this machine.

    >>> executor_type("dask://scheduler.lan")
    ExecutorSpec(kind='dask', host='scheduler.lan', port=8786)
    >>> str(executor_type("ray"))
    'ray'
    """

    kind: str
    host: str | None = None
    port: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in DEFAULT_PORTS:
            raise ValueError(f"executor kind {self.kind!r}: one of {', '.join(DEFAULT_PORTS)}")
        if (self.host is None) != (self.port is None):
            raise ValueError("an executor's host and port are given together, or neither")

    @property
    def netloc(self) -> str:
        """``HOST:PORT``, an IPv6 host in brackets."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def __str__(self) -> str:
        return self.kind if self.host is None else f"{self.kind}://{self.netloc}"


def executor_type(text: str) -> ExecutorSpec:
    """``--executor``'s argument type: the :class:`ExecutorSpec` it names, or argparse's one-line refusal."""
    from urllib.parse import urlsplit

    if text.lower() in DEFAULT_PORTS:
        return ExecutorSpec(text.lower())
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError as err:  # a port that is not a number, or out of range
        raise argparse.ArgumentTypeError(f"expected {FORMS}, got {text!r} ({err})") from None
    if (
        url.scheme not in DEFAULT_PORTS
        or not url.hostname
        or url.path not in ("", "/")
        or url.query
        or url.fragment
        or url.username is not None
        or port == 0
    ):
        raise argparse.ArgumentTypeError(f"expected {FORMS}, got {text!r}")
    return ExecutorSpec(url.scheme, url.hostname, DEFAULT_PORTS[url.scheme] if port is None else port)


def add_executor_arg(parser: argparse.ArgumentParser, pool_flag: str) -> None:
    """The ``--executor`` flag of a command whose jobs otherwise go to a process pool sized by ``pool_flag``."""
    parser.add_argument(
        "--executor",
        type=executor_type,
        metavar="WHERE",
        help=f"run the simulations on a cluster instead of this machine's processes ({pool_flag}): dask (a Dask "
        "cluster started on this machine), dask://HOST[:PORT] (a Dask scheduler, port 8786 unless given), ray, or "
        "ray://HOST[:PORT] (port 10001 unless given; RAY_AUTH_MODE=token for Ray 2.59 and later); every figure is the same wherever they run "
        "(docs/cluster.md)",
    )


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the platform has one)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def open_executor(spec: ExecutorSpec, jobs: int) -> Iterator[Executor]:
    """The executor ``spec`` names, for ``jobs`` independent jobs; closed (and a cluster it started stopped) on exit.

    Raises ValueError (one line) where the package is missing or the cluster cannot be reached, and where a job fails
    on a worker that cannot import specsim."""
    opener = _dask if spec.kind == "dask" else _ray
    with opener(spec, jobs) as executor:
        try:
            yield CommandExecutor(executor)
        except ImportError as err:  # raised on a worker and re-raised here: most often specsim missing there
            raise ValueError(
                f"--executor {spec}: a job failed on a worker with {type(err).__name__}: {err}; every worker needs "
                "specsim-llm installed at this version (docs/cluster.md)"
            ) from err


class _AsTheCommand:
    """``fn`` run as the command line runs it, inside :func:`specsim.core.names.as_flags`.  A worker process or thread
    starts outside it, so a note built there named the keyword where the command names its flag (serve-sim on a Dask
    worker: 'as engine names no release: name yours (engine vllm@0.33.0 ...)' where the command says '--engine').  It
    keeps ``fn``'s name (Dask names a task after it) and compares as ``fn`` (Ray makes one remote function per one)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args, **kwargs):
        from specsim.core.names import as_flags

        with as_flags():
            return self.fn(*args, **kwargs)

    def __eq__(self, other) -> bool:
        return isinstance(other, _AsTheCommand) and other.fn == self.fn

    def __hash__(self) -> int:
        return hash(self.fn)


class CommandExecutor(Executor):
    """``inner``, each job run as the command line runs (:class:`_AsTheCommand`); ``map`` is Executor's, through
    :meth:`submit`.  The one that builds ``inner`` shuts it down."""

    def __init__(self, inner: Executor) -> None:
        self._inner = inner

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        return self._inner.submit(_AsTheCommand(fn), *args, **kwargs)


def _reachable(spec: ExecutorSpec) -> None:
    """Refuse, in one line and within :data:`CONNECT_TIMEOUT_S`, an address that does not resolve or accept."""
    import socket

    try:
        socket.create_connection((spec.host, spec.port), timeout=CONNECT_TIMEOUT_S).close()
    except socket.gaierror as err:
        raise ValueError(f"--executor {spec}: cannot resolve {spec.host!r} ({err.strerror})") from None
    except TimeoutError:
        raise ValueError(f"--executor {spec}: {spec.netloc} did not answer within {CONNECT_TIMEOUT_S:g} s") from None
    except OSError as err:
        raise ValueError(f"--executor {spec}: cannot connect to {spec.netloc} ({err.strerror or err})") from None


@contextlib.contextmanager
def _dask(spec: ExecutorSpec, jobs: int) -> Iterator[Executor]:
    try:
        import distributed
    except ImportError:
        raise ValueError(DASK_MISSING.format(spec=spec)) from None
    with contextlib.ExitStack() as stack:
        if spec.host is None:
            workers = max(1, min(usable_cores(), jobs))
            address = stack.enter_context(
                # The dashboard on a free port: None means Dask's default, 8787, which a second cluster on the
                # machine finds taken (a warning, and an error where warnings are).
                distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
                )
            )
        else:
            _reachable(spec)
            address = f"tcp://{spec.netloc}"
            _ask_scheduler(spec, address)
        client = stack.enter_context(distributed.Client(address, timeout=CONNECT_TIMEOUT_S))
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except TimeoutError:
            raise ValueError(
                f"--executor {spec}: the scheduler has no workers (none joined within {CONNECT_TIMEOUT_S:g} s)"
            ) from None
        yield stack.enter_context(client.get_executor())


def _ask_scheduler(spec: ExecutorSpec, address: str) -> None:
    """Refuse a server that is not a Dask scheduler: dask's Client would wait forever for its handshake (a web server on
    the port), so ask the server who it is within :data:`CONNECT_TIMEOUT_S` first."""
    import asyncio

    from distributed.comm import connect

    async def identity():
        comm = await connect(address, timeout=CONNECT_TIMEOUT_S)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            await comm.close()

    async def bounded():
        return await asyncio.wait_for(identity(), CONNECT_TIMEOUT_S)

    try:
        answer = asyncio.run(bounded())
    except Exception as err:  # refused, timed out, or bytes that are not dask's protocol: not a scheduler
        answer = err
    if not (isinstance(answer, dict) and answer.get("type") == "Scheduler"):
        raise ValueError(
            f"--executor {spec}: no Dask scheduler answered at {spec.netloc} within {CONNECT_TIMEOUT_S:g} s "
            "(is it a dask scheduler's port?)"
        )


@contextlib.contextmanager
def _ray(spec: ExecutorSpec, jobs: int) -> Iterator[Executor]:
    try:
        import ray
    except ImportError:
        raise ValueError(RAY_MISSING.format(spec=spec)) from None
    if spec.host is not None:
        _reachable(spec)
    try:
        ray.init(address=None if spec.host is None else f"ray://{spec.netloc}")
    except ConnectionError as err:  # Ray's client gives up ("ray client connection timeout")
        raise ValueError(RAY_REFUSED.format(spec=spec, err=err)) from None
    try:
        yield RayExecutor(ray)
    finally:
        ray.shutdown()


class RayExecutor(Executor):
    """A :class:`concurrent.futures.Executor` on Ray: each call one Ray task, whose ``ObjectRef.future()`` is the
    future.  ``ray.util.multiprocessing.Pool`` has ``map`` but not ``submit`` and futures, which serve-sim's runs use
    (a callback per finished run).  Ray itself is not installed where specsim is tested: the suite tests this on a
    stand-in with Ray's ``remote``/``future()`` calls; it was run by hand on Ray 2.60.0 (docs/cluster.md).

    Parameters
    ----------
    ray : module
        The ``ray`` module, initialised.
    """

    def __init__(self, ray) -> None:
        self._ray = ray
        self._remote: dict[Callable, object] = {}

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        if fn not in self._remote:  # one remote function per function, not one per call
            self._remote[fn] = self._ray.remote(fn)
        return self._remote[fn].remote(*args, **kwargs).future()
