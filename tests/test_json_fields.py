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
    "optimal-gamma --tp 2 --batch 1",  # a draft model on vLLM at TP 2: the row adds the draft at TP 1
    "speedup --gamma 3 --batch 1,8",
    "speedup --gamma 3 --concurrency 4 --input-len 500 --output-len 100",
    "compare --batch 1,8",
    "compare --concurrency 4 --input-len 500 --output-len 100",
    "explain --batch 8",
    "explain --concurrency 4 --input-len 500 --output-len 100",
    "schedule --contexts 512,4096",
    "schedule --concurrency 1,8 --input-len 500 --output-len 100",
    "schedule --draft eagle3 --alpha 0.4",  # gamma 1 in two rows, speculate and too close to call (on_the_line empty)
    "capacity",
    "serve-sim --concurrency 2 --input-len 200 --output-len 20 --requests 8 --runs 2 --slo-ttft-ms 50 --slo-tpot-ms 10",
    "serve-sim --concurrency 4 --max-num-seqs 2 --input-len 200 --output-len 20 --requests 8 --runs 1",  # queued
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


def _names_table() -> list[list[str]]:
    """The rows of the page's 'One quantity, several names' table: its cells, backticks kept."""
    text = GLOSSARY.read_text().split("## One quantity, several names", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]
    return rows[1:]  # (the header)


def _at(doc: dict, dotted: str):
    for key in dotted.split("."):
        doc = doc[key]
    return doc


def test_the_names_of_one_quantity_across_commands_are_what_each_prints(capsys):
    """compare --json writes tokens_per_s_plain, the load answers plain.output_tokens_per_s, serve-sweep
    off_tokens_per_s: the names are kept (a rename breaks what scripts read) and docs/reference/json.md's table says
    which is which.  Each name it gives is one that command prints; serve-sweep's are serve-sim's at the same runs; and
    a load's plain throughput is below the decode batch's of as many sequences, as the page says (1,124 and 4,495 tok/s
    against 1,223 and 6,643 at 8 and 64)."""
    rows = _names_table()
    assert [r[0] for r in rows] == [
        "output tokens per second, plain",
        "output tokens per second, speculating",
        "time per output token, plain",
        "time per output token, speculating",
    ]
    load = ["--concurrency", "2", "--input-len", "200", "--output-len", "20", "--requests", "8"]
    outputs = []
    for command in (
        ["compare", "--batch", "8,64"],
        ["optimal-gamma", "--concurrency", "8,64"],
        ["serve-sim", *load, "--runs", "1"],
        ["serve-sweep", *load],
    ):
        assert main([*command, "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    compare, at_load, sim, sweep = outputs[0][0], outputs[1][0], outputs[2], outputs[3]["concurrencies"][0]
    for row in rows:
        names = [re.match(r"`([a-z_0-9.]+)`", cell).group(1) for cell in row[1:]]
        values = [_at(doc, name) for doc, name in zip((compare, at_load, sim, sweep), names)]
        assert all(isinstance(v, float) for v in values), (row[0], values)
        assert values[2] == values[3], row[0]  # serve-sweep's row is serve-sim's summary flattened
    plain = [(c["tokens_per_s_plain"], a["plain"]["output_tokens_per_s"]) for c, a in zip(outputs[0], outputs[1])]
    assert [(round(c), round(a)) for c, a in plain] == [(1223, 1124), (6643, 4495)]
