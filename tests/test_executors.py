"""``--executor`` (specsim/cli/executors.py): serve-sweep and serve-sim on a real Dask cluster print what they print in a
process pool and in one process, byte for byte, and every wrong executor is one line and exit status 2.

The cluster is a ``distributed.LocalCluster`` of two single-threaded workers inside the test process (processes=False,
so it starts in about 0.1 s) listening on loopback TCP: the command reaches it by ``dask://127.0.0.1:PORT`` as it would
a remote scheduler, and the deployment travels to the workers serialised over that connection.  Once, the command runs
as its own process against it.  Ray is not installed here: its adapter is checked on a stand-in with Ray's calls
(``ray.remote(f).remote(...).future()``), and its refusal where it is missing.  The tests that need Dask are skipped
where dask.distributed is not installed (it is in the test extra).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import subprocess
import sys
import types
from concurrent.futures import Future

import pytest

from specsim.cli import executors
from specsim.cli.executors import CommandExecutor, ExecutorSpec, RayExecutor, executor_type, open_executor
from specsim.cli.main import main

SWEEP = ["serve-sweep", "--rates", "2,8,32", "--requests", "40", "--alpha", "0.8", "--seed", "3", "--slo-tpot-ms", "20"]
SIM = ["serve-sim", "--rate", "4", "--requests", "40", "--runs", "3", "--alpha", "0.8", "--seed", "3"]


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@contextlib.contextmanager
def _cluster(workers: int = 2):
    """A Dask scheduler on 127.0.0.1 (a free port) with ``workers`` worker threads of this process: (its address as
    --executor takes it, a function that counts the tasks of a name the cluster has run)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        scheduler_port=0,
        dashboard_address=":0",  # None is Dask's default, 8787, which test_cluster.py's cluster may hold meanwhile
        silence_logs=50,
    ) as cluster:

        def ran(name: str) -> int:  # dask names a task by its function, less the leading underscore
            prefix = cluster.scheduler.task_prefixes.get(name)
            return 0 if prefix is None else prefix.state_counts["memory"]

        yield cluster.scheduler_address.replace("tcp://", "dask://"), ran


# -- the same bytes wherever the simulations run ---------------------------------------------------------------------
def test_serve_sweep_on_a_dask_cluster_prints_what_the_process_pool_and_one_process_print(capsys):
    # The process pool forks: it runs before the cluster's threads start (a fork beside threads warns on 3.12).
    serial = _run(capsys, SWEEP)
    pool = _run(capsys, SWEEP + ["--jobs", "2"])  # serve-sim's flag (--workers, its old name, in test_cluster.py)
    serial_json = _run(capsys, SWEEP + ["--json"])
    with _cluster() as (address, ran):
        cluster = _run(capsys, SWEEP + ["--executor", address])
        cluster_json = _run(capsys, SWEEP + ["--json", "--executor", address])
        assert ran("sweep_one") == 6  # each rate of both commands ran on the cluster
    assert serial[0] == 0 and "req/s  TPOT p50 off" in serial[1]
    assert (
        "note: llama-3.1-8b: at batch 129-1024" in serial[2]
    )  # vLLM's max_num_seqs on an H100 server: 1024  # notes from the workers' step-time sources come back
    assert cluster == serial and pool == serial
    assert cluster_json == serial_json


def test_serve_sim_runs_on_a_dask_cluster_print_what_the_process_pool_and_one_process_print(capsys):
    serial = _run(capsys, SIM)
    pool = _run(capsys, SIM + ["--jobs", "2"])
    with _cluster() as (address, ran):
        cluster = _run(capsys, SIM + ["--executor", address])
        assert ran("compare_one") == 3
    assert serial[0] == 0 and "runs: 3 of 40 requests (seeds 3-5)" in serial[1]
    assert cluster == serial and pool == serial


def test_the_command_as_its_own_process_reaches_the_scheduler_by_its_address(capsys, repo):
    serial = _run(capsys, SWEEP)
    env = {**os.environ, "PYTHONPATH": str(repo)}
    with _cluster(workers=1) as (address, ran):
        run = subprocess.run(
            [sys.executable, "-m", "specsim", *SWEEP, "--executor", address],
            capture_output=True,
            text=True,
            env=env,
            cwd=repo,
            timeout=120,
        )
        assert ran("sweep_one") == 3
    assert (run.returncode, run.stdout, run.stderr) == serial


# -- what --executor accepts, and each refusal in one line -----------------------------------------------------------
@pytest.mark.parametrize(
    "text, spec",
    [
        ("dask", ExecutorSpec("dask")),
        ("Ray", ExecutorSpec("ray")),
        ("dask://scheduler.lan", ExecutorSpec("dask", "scheduler.lan", 8786)),
        ("dask://10.0.0.5:9000", ExecutorSpec("dask", "10.0.0.5", 9000)),
        ("dask://[::1]:8786/", ExecutorSpec("dask", "::1", 8786)),
        ("ray://head:10001", ExecutorSpec("ray", "head", 10001)),
        ("ray://head", ExecutorSpec("ray", "head", 10001)),
    ],
)
def test_executor_forms(text, spec):
    assert executor_type(text) == spec
    assert executor_type(str(spec)) == spec  # what the errors name parses back to itself


@pytest.mark.parametrize(
    "value",
    ["", "process", "tcp://127.0.0.1:8786", "dask://", "dask://h:port", "dask://h:70000", "dask://h:0", "dask://h/x",
     "dask://u@h:1", "dask://h:1?x=1", "spark://h:7077"],
)  # fmt: skip
def test_a_form_that_is_not_an_executor_is_refused_by_the_parser(capsys, value):
    status, out, err = _run(capsys, SWEEP + ["--executor", value])
    assert status == 2 and out == ""
    head = (
        "specsim serve-sweep: error: argument --executor: expected dask, dask://HOST[:PORT], ray or ray://HOST[:PORT]"
    )
    assert err.startswith(f"{head}, got {value!r}") and err.endswith(" (see specsim serve-sweep --help)\n")
    assert err.count("\n") == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel completes them) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--jobs", "2", "--executor", "dask"], "--jobs 2 sizes a process pool on this machine, and --executor dask"),
        (["--executor", "dask://127.0.0.1:{free}"], "--executor dask://127.0.0.1:{free}: cannot connect to 127.0.0.1:{free}"),
        (["--executor", "dask://127.0.0.1:{silent}"], "--executor dask://127.0.0.1:{silent}: no Dask scheduler answered at "
         "127.0.0.1:{silent} within 0.5 s (is it a dask scheduler's port?)"),
    ],
)  # fmt: skip
def test_a_cluster_that_cannot_run_the_sweep_is_one_line(capsys, monkeypatch, silent_port, extra, message):
    pytest.importorskip("distributed")
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 0.5)
    free = _free_port()
    extra = [word.format(free=free, silent=silent_port) for word in extra]
    status, out, err = _run(capsys, SWEEP + extra)
    assert status == 2 and out == ""
    assert err.startswith("specsim serve-sweep: error: " + message.format(free=free, silent=silent_port))
    assert err.count("\n") == 1


def test_a_host_that_does_not_resolve_is_one_line(capsys, monkeypatch):
    # The resolver's answer stands in for DNS (which, on a machine without a network, may take its own timeouts).
    def unknown(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    status, out, err = _run(capsys, SWEEP + ["--executor", "dask://no-such-host.invalid"])
    assert (status, out) == (2, "")
    assert err == (
        "specsim serve-sweep: error: --executor dask://no-such-host.invalid:8786: cannot resolve "
        "'no-such-host.invalid' (Name or service not known)\n"
    )


def test_jobs_beside_an_executor_is_refused(capsys):
    status, out, err = _run(capsys, SIM + ["--jobs", "2", "--executor", "dask://127.0.0.1:1"])
    assert (status, out) == (2, "")
    assert err == (
        "specsim serve-sim: error: --jobs 2 sizes a process pool on this machine, and --executor dask://127.0.0.1:1 "
        "runs the simulations on its cluster's workers instead: drop one of them\n"
    )


def test_a_scheduler_without_workers_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 0.5)
    with _cluster(workers=0) as (address, _):
        status, out, err = _run(capsys, SWEEP + ["--executor", address])
    assert (status, out) == (2, "")
    assert err == (
        f"specsim serve-sweep: error: --executor {address}: the scheduler has no workers (none joined within 0.5 s)\n"
    )


def test_a_worker_without_specsim_is_one_line():
    with _cluster(workers=1) as (address, _), pytest.raises(ValueError) as raised:
        with open_executor(executor_type(address), 1) as pool:  # what a worker without specsim raises on every job
            pool.submit(importlib.import_module, "specsim_not_on_this_worker").result()
    assert str(raised.value) == (
        f"--executor {address}: a job failed on a worker with ModuleNotFoundError: No module named "
        "'specsim_not_on_this_worker'; every worker needs specsim-llm installed at this version (docs/cluster.md)"
    )


@pytest.mark.parametrize(
    "module, value, message",
    [
        ("distributed", "dask", "--executor dask needs dask[distributed]: pip install 'specsim-llm[cluster]'"),
        ("distributed", "dask://h:1", "--executor dask://h:1 needs dask[distributed]: pip install 'specsim-llm[cluster]'"),
        ("ray", "ray", "--executor ray needs Ray (optional, not installed with specsim): pip install 'ray[client]'"),
        ("ray", "ray://h", "--executor ray://h:10001 needs Ray (optional, not installed with specsim): pip install "
         "'ray[client]'"),
    ],
)  # fmt: skip
def test_a_missing_package_is_one_line_naming_what_to_install(capsys, monkeypatch, module, value, message):
    monkeypatch.setitem(sys.modules, module, None)  # import fails, as where it is not installed
    for command in (SWEEP, SIM):
        status, out, err = _run(capsys, command + ["--executor", value])
        assert (status, out, err) == (2, "", f"specsim {command[0]}: error: {message}\n")


# -- Ray's adapter, on a stand-in ------------------------------------------------------------------------------------
class _StandInRay(types.ModuleType):
    """Ray's calls the adapter makes, run here at once: ``init``, ``remote(f).remote(*args).future()``, ``shutdown``."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.calls: list = []

    def init(self, address=None):
        self.calls.append(("init", address))

    def shutdown(self):
        self.calls.append(("shutdown",))

    def remote(self, fn):
        self.calls.append(("remote", fn.__name__))

        def call(*args, **kwargs):
            future = Future()
            future.set_result(fn(*args, **kwargs))
            return types.SimpleNamespace(future=lambda: future)

        return types.SimpleNamespace(remote=call)


def test_ray_runs_serve_sweep_and_serve_sim_through_its_futures(capsys, monkeypatch, silent_port):
    ray = _StandInRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    assert _run(capsys, SWEEP + ["--executor", "ray"]) == _run(capsys, SWEEP)
    assert ray.calls == [("init", None), ("remote", "_sweep_one"), ("shutdown",)]  # one remote function, three calls
    ray.calls.clear()
    assert _run(capsys, SIM + ["--executor", f"ray://127.0.0.1:{silent_port}"]) == _run(capsys, SIM)
    assert ray.calls == [("init", f"ray://127.0.0.1:{silent_port}"), ("remote", "_compare_one"), ("shutdown",)]


def _named(keyword: str, flag: str) -> str:
    from specsim.core.names import given_as

    return given_as(keyword, flag)


def test_a_commands_jobs_name_its_flags_on_any_worker():
    """A note built in a job names what the command's user gave (--engine), as it would in one process: a worker
    thread or process starts outside as_flags, so serve-sim on a Dask cluster printed 'engine vllm@0.33.0' where it
    prints '--engine vllm@0.33.0' alone (test_serve_sim_runs_on_a_dask_cluster_...).  A thread pool starts outside it
    too: bare, its job names the keyword; through CommandExecutor, the flag, by submit and map alike, with the name
    Dask keys a task by."""
    from concurrent.futures import ThreadPoolExecutor

    from specsim.core.names import as_flags

    with as_flags(), ThreadPoolExecutor(1) as pool:
        assert pool.submit(_named, "engine", "--engine").result() == "engine"
        command = CommandExecutor(pool)
        assert command.submit(_named, "engine", "--engine").result() == "--engine"
        assert list(command.map(_named, ["engine", "tp"], ["--engine", "--tp"])) == ["--engine", "--tp"]
    from specsim.cli.executors import _AsTheCommand

    assert _AsTheCommand(_named).__name__ == "_named" and _AsTheCommand(_named) == _AsTheCommand(_named)


def test_ray_executor_map_keeps_the_order_of_its_inputs():
    assert list(RayExecutor(_StandInRay()).map(pow, [2, 3, 4], [2, 2, 2])) == [4, 9, 16]


def test_a_ray_client_server_that_refuses_the_connection_names_the_token(capsys, monkeypatch, silent_port):
    # Ray 2.60.0's client, against a `ray start --head` that asks for a token (the default from Ray 2.59), raises
    # ConnectionError("ray client connection timeout") from ray.init: one line, exit 2, naming what to set.
    ray = _StandInRay()

    def refuse(address=None):
        ray.calls.append(("init", address))
        raise ConnectionError("ray client connection timeout")

    ray.init = refuse
    monkeypatch.setitem(sys.modules, "ray", ray)
    code, out, err = _run(capsys, SIM + ["--executor", f"ray://127.0.0.1:{silent_port}"])
    assert code == 2 and out == ""
    line = f"specsim serve-sim: error: --executor ray://127.0.0.1:{silent_port}: Ray's client server did not take"
    assert err.startswith(line) and "RAY_AUTH_MODE=token" in err and len(err.strip().splitlines()) == 1, err
    assert ray.calls == [("init", f"ray://127.0.0.1:{silent_port}")]  # nothing submitted, nothing to shut down
