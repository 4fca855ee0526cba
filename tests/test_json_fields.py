"""docs/reference/json.md names every field the answering commands' --json prints, and nothing they do not print."""

from __future__ import annotations

import json
import re
from pathlib import Path

from specsim.cli.main import main

GLOSSARY = Path(__file__).resolve().parents[1] / "docs" / "reference" / "json.md"

#: Each answering command at decode batches and at loads, small enough to run in a few seconds in all.
COMMANDS = [
    "optimal-gamma --batch 1,8",
    "optimal-gamma --concurrency 4 --input-len 500 --output-len 100",
    "optimal-gamma --rate 2 --input-len 500 --output-len 100",
    "optimal-gamma --tree topk:2,depth:3,tokens:8 --draft eagle3 --batch 1",
    "speedup --gamma 3 --batch 1,8",
    "speedup --gamma 3 --concurrency 4 --input-len 500 --output-len 100",
    "compare --batch 1,8",
    "compare --concurrency 4 --input-len 500 --output-len 100",
    "explain --batch 8",
    "explain --concurrency 4 --input-len 500 --output-len 100",
    "schedule --contexts 512,4096",
    "schedule --concurrency 1,8 --input-len 500 --output-len 100",
    "schedule --draft eagle3 --alpha 0.4",  # gamma 1 at batch 255-256 on the line (on_the_line)
    "capacity",
    "serve-sim --concurrency 2 --input-len 200 --output-len 20 --requests 8 --runs 2 --slo-ttft-ms 50 --slo-tpot-ms 10",
    "serve-sweep --concurrency 1,2 --input-len 200 --output-len 20 --requests 8",
    "serve-sweep --rates 1,2 --input-len 200 --output-len 20 --requests 8 --slo-tpot-ms 10",
]
#: Fields whose contents are sentences, the deployment's identity, or keyed by a value (a batch size, a part's name):
#: the page says what they hold, not each key inside.
OPAQUE = {
    "deployment",
    "provenance",
    "notes",
    "findings",
    "memory_counted",
    "running_batch_time_share",
    "parts_s",
    "seeds",
    "gamma_by_batch",
}


def _fields(doc, out: set) -> set:
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.add(key)
            if key not in OPAQUE:
                _fields(value, out)
    elif isinstance(doc, list):
        for item in doc:
            _fields(item, out)
    return out


def _named() -> set:
    """The field names of the page: each backticked name in a table row's first cell."""
    names = set()
    for line in GLOSSARY.read_text().splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]))
    return names


def test_the_json_glossary_names_every_field_printed_and_nothing_else(capsys):
    # The JSON's fields were named only in the code that writes them: a notebook reading "batch_a_request_sees" or
    # "t_graphless_s" had no page saying what it is or in what unit.  This holds the page to what is printed.
    seen: set = set()
    for command in COMMANDS:
        assert main([*command.split(), "--json"]) == 0, command
        _fields(json.loads(capsys.readouterr().out), seen)
    named = _named()
    assert not seen - named, f"fields printed but not in docs/reference/json.md: {sorted(seen - named)}"
    assert not named - seen, f"fields in docs/reference/json.md that no command printed: {sorted(named - seen)}"
