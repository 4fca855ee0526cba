"""Benchmark: cold-start time of the CLI and time to evaluate a speedup surface.

Targets: ``specsim optimal-gamma --alpha 0.8`` from a cold process under
0.5 s on a 2-core machine once the kernel table is cached (the run before
the timed ones builds it), and a surface of 101 alpha x 17 gamma x 10 batch
sizes x 4 contexts (68,680 points) at >= 1e7 points/s with the kernel and
default sources (the roofline does about 1e8).

Run:  python benchmarks/bench_core.py [--repeats N]

Prints figures; asserts nothing (timings on shared machines are noisy).  The
``python -c pass`` start-up is measured in the same run so the CLI's own cost
can be read as a difference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def cold_runs(cmd: list[str], repeats: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    exe = shutil.which("specsim")
    cli = [exe] if exe else [sys.executable, "-m", "specsim"]
    bare = cold_runs([sys.executable, "-c", "pass"], args.repeats)
    cold_runs(cli + ["optimal-gamma", "--alpha", "0.8"], 1)  # builds and caches the kernel tables, if not yet
    cold = cold_runs(cli + ["optimal-gamma", "--alpha", "0.8"], args.repeats)
    print(f"cold process, {args.repeats} runs ({' '.join(cli)}):")
    print(f"  python -c pass                        median {statistics.median(bare) * 1e3:7.1f} ms  min {min(bare) * 1e3:7.1f} ms")
    print(f"  specsim optimal-gamma --alpha 0.8     median {statistics.median(cold) * 1e3:7.1f} ms  min {min(cold) * 1e3:7.1f} ms"
          f"   (target < 500 ms)")

    from specsim.speculation.deployment import Deployment
    from specsim.speculation.search import speedup

    alpha = np.linspace(0.0, 1.0, 101)[:, None, None, None]
    gamma = np.arange(17)[None, :, None, None]
    batch = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])[None, None, :, None]
    context = np.array([512, 1128, 4096, 8192])[None, None, None, :]
    for timing in ("roofline", "kernels", "hybrid"):
        dep = Deployment.build(timing=timing)
        s = speedup(dep, alpha, gamma, batch, context)  # warm caches (and build the kernel table)
        surface_times = []
        for _ in range(max(args.repeats, 20)):
            start = time.perf_counter()
            s = speedup(dep, alpha, gamma, batch, context)
            surface_times.append(time.perf_counter() - start)
        best = min(surface_times)
        print(f"speedup surface {s.shape} = {s.size:,} points, --timing {timing} (step times included):")
        print(f"  median {statistics.median(surface_times) * 1e3:.2f} ms  min {best * 1e3:.2f} ms  "
              f"= {s.size / statistics.median(surface_times):.3g} points/s median   (target >= 1e7 points/s)")


if __name__ == "__main__":
    main()
