"""Read a GPU's memory capacity as the engines read it, and write it with the device, driver and torch version.

vLLM's ``gpu_memory_utilization`` and SGLang's ``mem_fraction_static`` are fractions of the total that CUDA reports
(``torch.cuda.mem_get_info``); a datasheet's "141 GB" is 141 GiB.  This records, for each visible GPU: torch's
``total_memory``, ``mem_get_info``'s free and total after a CUDA context is made, and nvidia-smi's ``memory.total``
(MiB), so that a hardware profile's ``memory_bytes`` can be the device's own figure.

    python scripts/gpu_memory_capacity.py --out DIR      # writes DIR/gpu_memory.csv

Without a CUDA device it says so in one line and exits 2.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path


def _smi() -> dict[int, dict[str, str]]:
    """nvidia-smi's view of each GPU (index -> fields), empty where nvidia-smi is absent."""
    if shutil.which("nvidia-smi") is None:
        return {}
    fields = "index,name,driver_version,memory.total,memory.used,memory.free"
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {}
    for line in out.strip().splitlines():
        values = [v.strip() for v in line.split(",")]
        rows[int(values[0])] = dict(zip(fields.split(","), values))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for gpu_memory.csv")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu_memory_capacity: no CUDA device is visible; run it on the GPU machine", file=sys.stderr)
        return 2
    smi = _smi()
    rows = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        with torch.cuda.device(i):
            free, total = torch.cuda.mem_get_info()
        s = smi.get(i, {})
        rows.append(
            {
                "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
                "index": i,
                "device": props.name,
                "driver": s.get("driver_version", ""),
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "torch_total_memory_bytes": props.total_memory,
                "mem_get_info_total_bytes": total,
                "mem_get_info_free_bytes": free,
                "smi_memory_total_mib": s.get("memory.total", ""),
                "smi_memory_used_mib": s.get("memory.used", ""),
            }
        )
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "gpu_memory.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for r in rows:
        print(
            f"{r['device']}: torch total {r['torch_total_memory_bytes'] / 2**30:.2f} GiB "
            f"({r['torch_total_memory_bytes'] / 1e9:.2f} GB), free after a context "
            f"{r['mem_get_info_free_bytes'] / 2**30:.2f} GiB, nvidia-smi {r['smi_memory_total_mib']} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
