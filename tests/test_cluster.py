"""Sweeps on a real distributed engine: a Dask ``distributed.LocalCluster`` through the executor the docs show.

``serve_sweep(..., executor=client.get_executor())`` (docs/cluster.md) runs each rate's simulations on the cluster's
workers, which here are two separate processes: the deployment, its step-time tables and the workload travel to them
pickled, as to any remote machine.  The rows must equal, number for number, the serial run and ``serve-sweep
--workers 2`` (a process pool).  A grid sweep of the library is split by hardware profile and mapped the same way.
Skipped where dask.distributed is not installed (it is in the test extra).
"""

from __future__ import annotations

import json
from functools import partial

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from specsim.cli.main import main  # noqa: E402
from specsim.serving.simulator import EngineLimits, serve_sweep  # noqa: E402
from specsim.speculation.deployment import Deployment  # noqa: E402
from specsim.speculation.sweep import sweep  # noqa: E402

RATES = (2.0, 8.0, 32.0)
REQUESTS = 40


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread each; the scheduler and its HTTP server on free ports (8787, the default,
    may be taken by another cluster on the machine, or by the other xdist worker)."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", scheduler_port=0, silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _deployment() -> Deployment:
    return Deployment.build("h100-sxm", "llama-3.1-8b", "llama-3.2-1b", timing="hybrid", engine="vllm")


def _sweep(executor=None) -> pd.DataFrame:
    return serve_sweep(
        _deployment(),
        RATES,
        "chat",
        REQUESTS,
        0.8,
        "schedule",
        EngineLimits(),
        seed=3,
        slo_tpot_s=0.02,
        executor=executor,
    )


def test_serve_sweep_on_a_dask_cluster_equals_the_serial_run_and_the_process_pool(client, capsys):
    on_cluster = _sweep(client.get_executor())
    assert client.run(lambda: 1) and len(client.scheduler_info()["workers"]) == 2  # two live worker processes
    pd.testing.assert_frame_equal(on_cluster, _sweep(), check_exact=True)
    assert (
        main(
            [
                "serve-sweep",
                "--rates",
                ",".join(f"{r:g}" for r in RATES),
                "--workload",
                "chat",
                "--requests",
                str(REQUESTS),
                "--alpha",
                "0.8",
                "--seed",
                "3",
                "--slo-tpot-ms",
                "20",
                "--workers",
                "2",
                "--hardware",
                "h100-sxm",
                "--target",
                "llama-3.1-8b",
                "--draft",
                "llama-3.2-1b",
                "--timing",
                "hybrid",
                "--engine",
                "vllm",
                "--json",
            ]
        )
        == 0
    )
    pool = pd.DataFrame(json.loads(capsys.readouterr().out)["rates"])
    pd.testing.assert_frame_equal(on_cluster[pool.columns], pool, check_exact=True, check_dtype=False)
    assert list(on_cluster.rate) == list(RATES) and (on_cluster.on_tpot_p50_s > 0).all()


def test_a_grid_sweep_split_by_hardware_on_the_cluster_equals_one_call(client):
    hardware = ["h100-sxm", "h200", "a100-sxm-80gb"]
    grid = partial(
        sweep,
        alpha=[0.6, 0.8],
        gamma=[0, 2, 4],
        batch=[1, 16, 256],
        context=[512, 4096],
        pairs=(("llama-3.1-8b", "llama-3.2-1b"),),
        timing="hybrid",
        engine="vllm",
    )
    parts = list(client.get_executor().map(lambda hw: grid(hardware=hw), hardware))
    together = pd.concat(parts, ignore_index=True)
    pd.testing.assert_frame_equal(together, grid(hardware=hardware), check_exact=True)
    assert list(together.hardware.unique()) == hardware and len(together) == 3 * 2 * 3 * 3 * 2
