"""Benchmark: cold-start time of the CLI and time to evaluate a speedup surface.

Targets (issue 28): ``specsim optimal-gamma`` (the default deployment, its published acceptance) from a cold process
within 2x of ``python -c "import numpy"`` on the same machine (issue 37 traded issue 28's 1.5x for frozen dataclasses and plain YAML reads) (``--alpha 0.8`` is timed beside it), once the kernel table is cached (the run before the timed ones builds it), and a surface of 101
alpha x 17 gamma x 10 batch sizes x 4 contexts (68,680 points) at >= 1e7 points/s with the default source.

Run:  python benchmarks/bench_core.py [--repeats N] [--instructions]

Prints figures as ratios measured in one run, the two commands alternating; asserts nothing (timings on shared
machines are noisy).  The child processes may write bytecode (as an installed package has it), whatever
PYTHONDONTWRITEBYTECODE says here.  ``--instructions`` also counts the instructions each command executes under
valgrind's callgrind (where valgrind is installed; about ten seconds a command), with PYTHONHASHSEED=0 and one BLAS
thread: a count that does not move with the machine's load, unlike the wall times.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def child_env() -> dict[str, str]:
    """The children's environment: this one, with bytecode writing allowed and this checkout's source first."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(REPO)}


def alternate(commands: dict[str, list[str]], repeats: int) -> dict[str, list[float]]:
    """Wall seconds of each command per round, the commands run in turn (so load drifts hit both alike)."""
    env = child_env()
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, cmd in commands.items():
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            times[name].append(time.perf_counter() - start)
    return times


def instructions(cmd: list[str]) -> int | None:
    """Instructions ``cmd`` executes (callgrind's "Collected"), or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    env = child_env() | {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    return int(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--instructions", action="store_true", help="also count instructions under callgrind")
    args = parser.parse_args()

    # the script a user runs: beside this interpreter (its venv's, activated or not), else on PATH, else python -m specsim
    beside = Path(sys.executable).parent / "specsim"
    exe = str(beside) if beside.is_file() else shutil.which("specsim")
    cli = [exe] if exe else [sys.executable, "-m", "specsim"]
    commands = {
        "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
        "specsim optimal-gamma": cli + ["optimal-gamma"],
        "specsim optimal-gamma --alpha 0.8": cli + ["optimal-gamma", "--alpha", "0.8"],
        "specsim optimal-gamma --concurrency": cli + ["optimal-gamma", "--concurrency"],
    }
    alternate(commands, 1)  # builds and caches the kernel tables and the bytecode, if not yet
    times = alternate(commands, args.repeats)
    base = statistics.median(times["python -c 'import numpy'"])
    print(f"cold process, {args.repeats} alternating runs ({' '.join(cli)}):")
    for name, t in times.items():
        ratio = "" if name.startswith("python") else f"  ratio of the medians {statistics.median(t) / base:.2f}x"
        print(f"  {name:<36} median {statistics.median(t) * 1e3:7.1f} ms  min {min(t) * 1e3:7.1f} ms{ratio}")
    print(
        "  (target: specsim optimal-gamma <= 2x; the default concurrency grid, 1-256 users x gamma 0-16 by the serving "
        f"model, under 1 s: median {statistics.median(times['specsim optimal-gamma --concurrency']):.3f} s)"
    )
    if args.instructions:
        counts = {name: instructions(cmd) for name, cmd in commands.items()}
        if None in counts.values():
            print("instructions: valgrind is not installed here")
        else:
            numpy_count = counts["python -c 'import numpy'"]
            print("instructions executed (callgrind, PYTHONHASHSEED=0, OPENBLAS_NUM_THREADS=1):")
            for name, count in counts.items():
                ratio = "" if count == numpy_count else f"  ratio {count / numpy_count:.2f}x"
                print(f"  {name:<36} {count / 1e6:7.1f} million{ratio}")

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
        print(
            f"  median {statistics.median(surface_times) * 1e3:.2f} ms  min {best * 1e3:.2f} ms  "
            f"= {s.size / statistics.median(surface_times):.3g} points/s median   (target >= 1e7 points/s)"
        )


if __name__ == "__main__":
    main()
