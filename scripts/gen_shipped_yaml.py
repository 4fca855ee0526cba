"""Write specsim/_shipped_yaml.json: the package's own YAML files (built-in hardware profiles, the catalog index),
parsed once, with each file's CRC-32.

``load_yaml(..., shipped=True)`` reads a file from this bundle when its bytes still have the CRC recorded here (so a
cold run does not import PyYAML), and parses the YAML itself otherwise.  tests/test_hardware.py holds the bundle to the
files.  Run after editing any of them:

    python scripts/gen_shipped_yaml.py
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from specsim.core.limits import SHIPPED_BUNDLE, load_yaml
from specsim.describe.hardware import _builtin_files
from specsim.describe.models import _CATALOG


def shipped_yaml_files() -> list[Path]:
    """The package's own YAML files: the built-in hardware profiles (and measured ones) and the catalog index."""
    return sorted(_builtin_files().values(), key=lambda p: p.name) + [_CATALOG / "index.yaml"]


def main() -> None:
    bundle = {}
    for path in shipped_yaml_files():
        raw = path.read_bytes()
        bundle[path.name] = {"crc32": zlib.crc32(raw), "data": load_yaml(path, "shipped file")}
    Path(SHIPPED_BUNDLE).write_text(json.dumps(bundle, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {SHIPPED_BUNDLE} ({len(bundle)} files)")


if __name__ == "__main__":
    main()
