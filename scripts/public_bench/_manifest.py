"""The one writer of the source.yaml manifests that the converters in this folder build in code.

pyyaml writes the document in its keys' order, a string of several lines as a literal block (the mapping and the
notes read as they were written), a list of numbers on one line (``concurrency: [4, 8, 16]``, as the manifests
written by hand and from templates have them), 120 characters a line.  A YAML comment is no data, so pyyaml cannot write one: a
top-level key whose value needs its provenance beside it (``engine_spec``, the engine limits) gets it as a trailing
``# ...`` on its line, added after the dump; such a value must fit on that one line.

The converters are run as scripts (``python scripts/public_bench/NAME.py RAW_FOLDER``), so this folder is on
``sys.path`` and they import this module by its name.
"""

from __future__ import annotations

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper writing a string with a newline as a literal block and a list of numbers in flow style."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


def _list(dumper: yaml.SafeDumper, value: list) -> yaml.SequenceNode:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=bool(value) and numbers)


_Dumper.add_representer(str, _text)
_Dumper.add_representer(list, _list)


def manifest_yaml(doc: dict, comments: dict[str, str] | None = None) -> str:
    """``doc`` as source.yaml text; ``comments`` maps a top-level key to the note written after its value.

    >>> print(manifest_yaml({"engine_spec": "sglang@0.5.12", "runs": [{"file": "a.jsonl", "concurrency": [4, 8]}]},
    ...                     {"engine_spec": "the release both arms ran"}), end="")
    engine_spec: sglang@0.5.12   # the release both arms ran
    runs:
    - file: a.jsonl
      concurrency: [4, 8]
    >>> manifest_yaml({"notes": "two\\nlines"}, {"notes": "x"})
    Traceback (most recent call last):
    ...
    ValueError: source.yaml key 'notes': its value takes more than one line, so it cannot carry the comment 'x'
    """
    lines = yaml.dump(
        doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None
    ).splitlines()
    for key, comment in (comments or {}).items():
        if key not in doc:
            raise ValueError(f"source.yaml key {key!r}: commented but not in the document (keys: {', '.join(doc)})")
        i = next(n for n, line in enumerate(lines) if line.startswith(f"{key}:"))
        if i + 1 < len(lines) and lines[i + 1].startswith((" ", "-")):
            raise ValueError(
                f"source.yaml key {key!r}: its value takes more than one line, so it cannot carry the comment {comment!r}"
            )
        lines[i] += f"   # {comment}"
    return "\n".join(lines) + "\n"
