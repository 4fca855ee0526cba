"""The input contract: plausible ranges for every size, and readers that refuse hostile files.

Every number that enters specsim (a CLI flag, a YAML profile, a CSV, a
config.json, a logits file) is finite and inside a range that a real
deployment can reach; beyond it the answer would be meaningless or the search
would allocate without bound.  The ranges live here, once, and the CLI's
parsers, the dataclasses and the library's entry points all check against them.

Memory budget: with these bounds the largest search (``schedule`` at
``MAX_BATCH`` batch sizes times ``MAX_GAMMA + 1`` values of gamma) holds about
4.3 million points per array, under 40 MB each.

File readers
    :func:`load_yaml` refuses aliases (a profile never needs them, and an
    alias bomb expands a few hundred bytes to gigabytes), duplicate keys
    (the second silently replaced the first), nesting deeper than
    :data:`MAX_YAML_DEPTH` and files over :data:`MAX_TEXT_BYTES`.
    :func:`load_array` reads the ``.npy`` header (or each member's header in
    an ``.npz``) and refuses arrays over :data:`MAX_ARRAY_ELEMENTS` before
    anything is allocated.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DuplicateKey",
    "UnknownName",
    "MAX_ARRAY_ELEMENTS",
    "MAX_BATCH",
    "MAX_CONTEXT",
    "MAX_GAMMA",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LAYERS",
    "MAX_LOOP_TOKENS",
    "MAX_MODEL_DIM",
    "MAX_RATE_PER_S",
    "MAX_REPEATS",
    "MAX_REQUESTS",
    "MAX_SEED",
    "MAX_TEXT_BYTES",
    "MAX_TP",
    "MAX_WORKERS",
    "MAX_YAML_DEPTH",
    "check_int",
    "as_calibration",
    "as_name_or_path",
    "check_real",
    "is_real",
    "load_array",
    "load_json",
    "load_yaml",
    "not_a_file",
    "unique_keys",
    "whole_batches",
    "whole_numbers",
]

#: Sequences in one batch (vLLM's max_num_seqs tops out in the low thousands).
MAX_BATCH = 65_536
#: Tokens cached per sequence (4M: beyond every released context window).
MAX_CONTEXT = 4_194_304
#: Largest width, head count, vocabulary or expert count read from a config.json (vocabularies reach 262,208 in
#: Gemma 3; no released model has a dimension in the millions).
MAX_MODEL_DIM = 10_000_000
#: Most layers a config.json may declare (the deepest released decoders have about 130; each layer costs work in
#: every step-time call).
MAX_LAYERS = 1024
#: GPUs in one tensor-parallel group (a hardware profile's max_devices is at most this).
MAX_TP = 1024
#: Requests in one serving simulation (10,000 x 1,000 tokens take about 1.4 s; see benchmarks/bench_serving.py).
MAX_REQUESTS = 200_000
#: Requests one serve-sim command simulates over all its runs (about 2.5 minutes on one core).
MAX_SIMULATED_REQUESTS = 1_000_000
#: Poisson arrival rate of a serving simulation, requests per second: one engine instance serves tens to hundreds a
#: second, and past a million the arrivals fall within a microsecond of each other (rates computed from them overflow).
MAX_RATE_PER_S = 1e6
#: Timed repeats (and untimed warm-up passes) of one harness configuration.
MAX_REPEATS = 10_000
#: Tokens generated per sequence by the harness's speculative loop.
MAX_LOOP_TOKENS = 100_000
#: Worker processes of a serving sweep.
MAX_WORKERS = 256
#: Largest random seed (numpy's SeedSequence takes any non-negative integer; 32 bits keep seeds printable).
MAX_SEED = 2**32 - 1
#: Drafted tokens per step (engines cap speculation far below this).
MAX_GAMMA = 64
#: Elements of one logits array read by ``specsim acceptance`` (800 MB in float64).
MAX_ARRAY_ELEMENTS = 100_000_000
#: Bytes of one text input (YAML profile, config.json, metrics page, CSV).
MAX_TEXT_BYTES = 64 * 1024 * 1024
#: Nesting depth of a YAML profile (profiles use 3).
MAX_YAML_DEPTH = 16


class UnknownName(KeyError, ValueError):
    """A name specsim has no entry for (a model, a hardware profile, a drafter, a figure): a lookup that missed
    (``KeyError``) and bad input (``ValueError``: what a notebook catches for every other bad argument), its message
    printed as written (a KeyError's is quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number, numpy's included, and not a bool (True is not 1 second).

    >>> is_real(0.5), is_real(np.float32(0.5)), is_real(True), is_real("1")
    (True, True, False, False)
    """
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def check_int(what: str, value: Any, minimum: int, maximum: int) -> int:
    """``value`` as an int in [minimum, maximum], or ValueError naming ``what`` and the range.

    Accepts integer-valued floats (8.0) and refuses 8.9, booleans, NaN and strings.

    >>> check_int("batch", 8.0, 1, MAX_BATCH)
    8
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be an integer in [{minimum}, {maximum}], got {value!r}")
    if isinstance(value, (float, np.floating)) and not (np.isfinite(value) and float(value).is_integer()):
        raise ValueError(f"{what} must be an integer in [{minimum}, {maximum}], got {value!r}")
    number = int(value)
    if not minimum <= number <= maximum:
        shown = str(number) if len(str(number)) <= 30 else f"a {len(str(number))}-digit number"
        raise ValueError(f"{what} must be an integer in [{minimum}, {maximum}], got {shown}")
    return value if isinstance(value, int) else number  # an int subclass keeps what it carries (cli.flags.UnsetInt)


def check_real(what: str, value: Any, minimum: float, maximum: float, above: bool = False) -> float:
    """``value`` as a float in [minimum, maximum] (``above``: (minimum, maximum]), or ValueError naming ``what`` and the
    range: a bool, a string, NaN or infinity is not a number here (an infinite ``maximum`` shows as ``inf)``: any
    finite number up to it).

    >>> check_real("rtol", 0.01, 0.0, 0.5)
    0.01
    """
    low = "(" if above else "["
    high = ")" if maximum == float("inf") else "]"  # infinity itself is refused below
    shown = [f"{int(v):,}" if float(v).is_integer() else f"{v:g}" for v in (minimum, maximum)]
    try:  # a Python int past a float's range is no number here either
        x = float(value) if is_real(value) else float("nan")
    except OverflowError:
        x = float("nan")
    if not np.isfinite(x) or not (minimum < x if above else minimum <= x) or not x <= maximum:
        raise ValueError(f"{what} must be a number in {low}{shown[0]}, {shown[1]}{high}, got {value!r:.60}")
    return x


def whole_numbers(what: str, values: Any, minimum: int, maximum: int, plural: str | None = None) -> list[int]:
    """A non-empty list (or one number) of whole numbers in [minimum, maximum], as Python ints (rows built from them go
    to JSON as they are: numpy's int64 does not), or ValueError naming ``what`` (each item; ``plural``: the list).

    >>> whole_numbers("concurrency", [1, 8.0], 1, MAX_BATCH)
    [1, 8]
    """
    items = np.atleast_1d(np.asarray(values, dtype=object))
    if items.ndim != 1 or items.size == 0:
        raise ValueError(f"{plural or what} must be a non-empty list of whole numbers, got {values!r:.60}")
    return [check_int(what, v, minimum, maximum) for v in items]


def repeated(values: list) -> list:
    """The values of ``values`` that an earlier one equals, in order (4 and 4.0 are one): the one home of a list's
    repeats, which the command line's list flags and the library's loads refuse by name."""
    return [v for i, v in enumerate(values) if v in values[:i]]


def whole_batches(batches: Any) -> np.ndarray:
    """A non-empty list of batch sizes, each a whole number in [1, MAX_BATCH], as floats (a table labels its rows by
    them: a batch of 2.5 was computed and shown as 2).

    >>> whole_batches([1, 8.0]).tolist()
    [1.0, 8.0]
    """
    return np.array(whole_numbers("batch", batches, 1, MAX_BATCH, "batches"), dtype=float)


def as_calibration(value: Any) -> Any:
    """``value`` where it is a calibration read from its file (what ``Deployment.build(calibration=)`` takes), else
    TypeError naming the keyword: a file's path there failed inside build ("'str' object has no attribute 'fixes'").
    (Duck-typed on ``fixes``: this floor does not import the calibration's.)

    >>> as_calibration("/tmp/calibration.yaml")
    Traceback (most recent call last):
    ...
    TypeError: calibration is a calibration read from its file (specsim.read_calibration(path)), got str '/tmp/calibration.yaml'
    """
    if not callable(getattr(value, "fixes", None)):
        raise TypeError(
            "calibration is a calibration read from its file (specsim.read_calibration(path)), got "
            f"{type(value).__name__} {value!r:.60}"
        )
    return value


def as_name_or_path(what: str, value: Any, takes: str) -> str:
    """``value`` as text where it is a name or a path (a str or a Path), else TypeError naming ``what`` and what it
    ``takes``: an object's repr was read as a file name (OSError 'File name too long'), a model's or a drafter's
    object passed where its name belongs goes to the constructor that takes it, ``Deployment(hardware, target, drafter)``.

    >>> as_name_or_path("a model", Path("m/config.json"), "a name or a config.json's path")
    'm/config.json'
    >>> as_name_or_path("a model", 3, "a name or a config.json's path")
    Traceback (most recent call last):
    ...
    TypeError: a model is a name or a config.json's path (a str or a Path), got int
    """
    if not isinstance(value, (str, Path)):
        hint = "" if isinstance(value, (int, float)) else ": an object goes to Deployment(hardware, target, drafter)"
        raise TypeError(f"{what} is {takes} (a str or a Path), got {type(value).__name__}{hint}")
    return str(value)


def not_a_file(path: str | Path) -> str:
    """Why ``path`` is not a file to read, in words: "does not exist", "is a folder", "is not a regular file" (a
    device, a pipe); "" where it is one.  Every reader names it so (a folder was reported as missing).

    >>> not_a_file("/nonexistent/x.csv"), not_a_file("/"), not_a_file("/dev/null")
    ('does not exist', 'is a folder', 'is not a regular file')
    """
    p = Path(path)
    if p.is_file():
        return ""
    if p.is_dir():
        return "is a folder"
    return "is not a regular file" if p.exists() else "does not exist"


def _read_text(path: Path, what: str) -> str:
    """A user's UTF-8 text file, within :data:`MAX_TEXT_BYTES`.  A leading byte-order mark is the encoding's signature,
    not text (Windows tools save UTF-8 with one; Python's ``json.loads`` of bytes skips it too): "utf-8-sig" drops it,
    and reads a file without one exactly as "utf-8" does."""
    size = path.stat().st_size
    if size > MAX_TEXT_BYTES:
        raise ValueError(f"{what} {str(path)!r} is {size:,} bytes; the limit is {MAX_TEXT_BYTES:,}")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{what} {str(path)!r} is not UTF-8 text") from None


#: A config.json (a model's or a head's) is a few kB; this bounds what is parsed, and how deep.
MAX_JSON_BYTES = 16 * 1024 * 1024
#: A hardware profile or catalog index is a few kB.
MAX_YAML_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 64


# Longest integer literal a JSON or YAML file may hold: no count or size here needs 20 digits, and Python refuses to
# convert integers of more than 4300.
MAX_INT_CHARS = 64


def _check_int_chars(where: str, text: str) -> None:
    if len(text) > MAX_INT_CHARS:
        raise ValueError(f"{where}: an integer of {len(text):,} characters; numbers here have at most {MAX_INT_CHARS}")


def int_literal(where: str, text: str) -> int:
    """A JSON integer literal, refused past :data:`MAX_INT_CHARS` characters (``json.loads``'s ``parse_int``)."""
    _check_int_chars(where, text)
    return int(text)


class DuplicateKey(ValueError):
    """A key given twice in one JSON object (:func:`unique_keys`): a reader that words its own message for JSON it cannot
    parse passes this one on, which names the key."""


def unique_keys(where: str):
    """A ``json.loads`` ``object_pairs_hook`` that refuses a key given twice in one object (JSON keeps the last one
    silently: a config.json's second hidden_size won), naming it."""

    def pairs(items: list) -> dict:
        twice = sorted(set(repeated([k for k, _ in items])))
        if twice:
            raise DuplicateKey(f"{where}: the key {twice[0]!r} appears twice; each once")
        return dict(items)

    return pairs


def load_json(path: str | Path, what: str = "JSON file", allow_infinity: bool = False, unique: bool = False) -> Any:
    """Parse a JSON file within a size and nesting budget; NaN and Infinity (not JSON) are refused, except that
    ``allow_infinity`` reads ``Infinity`` (Python's json writes it for float('inf'), as SGLang's benchmark does);
    ``unique``: a key given twice in one object is refused (:func:`unique_keys`)."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_JSON_BYTES:
        raise ValueError(f"{what} {str(p)!r} is {size:,} bytes; the limit is {MAX_JSON_BYTES:,}")
    where = f"{what} {str(p)!r}"
    return loads_json(_read_text(p, what), where, allow_infinity, unique_keys(where) if unique else None)


def loads_json(text: str, where: str, allow_infinity: bool = False, object_pairs_hook: Any = None) -> Any:
    """Parse JSON text within the nesting budget (the caller bounds its size); see :func:`load_json`.
    ``object_pairs_hook`` is ``json.loads``'s (a reader that refuses duplicate keys passes one)."""

    depth = deepest = 0
    in_string = escape = False
    for ch in text:  # bracket depth outside strings, before the recursive parser sees it
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_JSON_DEPTH:
        raise ValueError(f"{where} nests {deepest} levels deep; at most {MAX_JSON_DEPTH}")

    def constant(name: str) -> float:
        if allow_infinity and name == "Infinity":
            return float("inf")
        raise ValueError(f"{where}: {name} is not a JSON number")

    def integer(literal: str) -> int:
        return int_literal(where, literal)

    try:
        return json.loads(text, parse_constant=constant, parse_int=integer, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not valid JSON ({err})") from None


def load_yaml(path: str | Path, what: str = "YAML file", *, shipped: bool = False) -> Any:
    """Parse a YAML file safely: no aliases, no duplicate keys, bounded depth and size.

    ``shipped`` files are the package's own (the catalog index, the built-in profiles): read by libyaml's C parser
    (PyYAML's CSafeLoader, imported when the first file is read), ten times faster than the checked one; a test holds
    every one to what the checked reader gives (tests/test_hardware.py).

    A user's file is scanned and parsed by libyaml too (where PyYAML has it), and composed and constructed by PyYAML's
    Python composer and safe constructor with the checks above: a 20 kB calibration file (``calibrate-engine --out``)
    took 32 ms with PyYAML's plain-Python scanner and parser, 7 ms so (CPU time, one core).  Where libyaml refuses the text, the plain-Python reader reads it again, so
    that a refusal names the line PyYAML's own parser names (libyaml's marks differ on some errors)."""
    path = Path(path)
    import yaml

    if shipped:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise ValueError(
            f"{what} {str(path)!r} is {size:,} bytes; a profile is a few kB, the limit is {MAX_YAML_BYTES:,}"
        )
    text = _read_text(path, what)
    where = f"{what} {str(path)!r}"
    parser = getattr(yaml, "CSafeLoader", None) and yaml.cyaml.CParser
    # libyaml reads some texts that PyYAML's own parser refuses: a tab inside a plain scalar, a "?" inside a flow
    # collection's plain scalar, a byte-order mark past the start, a block scalar's header with a "#" at once after it
    # (found by feeding both readers mutated copies of the tree's YAML files); and PyYAML refuses a character it cannot
    # print before reading anything, libyaml only when it reaches it (after an alias, say, past its first 16 kB).
    # Texts with any of those are left to PyYAML's parser, which refuses them as it did.
    if parser and not _PYYAML_ONLY.search(text) and not yaml.reader.Reader.NON_PRINTABLE.search(text):
        try:
            return _checked_yaml(text, where, parser)
        except yaml.YAMLError:
            pass  # read again by the plain-Python parser below, for its message
    try:
        return _checked_yaml(text, where, None)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{where}: not valid YAML{at}") from None


#: Text in which libyaml and PyYAML's own parser part ways (see load_yaml): read by PyYAML's alone.
_PYYAML_ONLY = re.compile("[\t?\ufeff]|[|>][-+0-9]*#")


def _checked_yaml(text: str, where: str, parser: Any) -> Any:
    """``text`` read by PyYAML's safe loader, its events from ``parser`` (libyaml's CParser; None: PyYAML's own scanner
    and parser) and its nodes composed and constructed in Python, refusing aliases, depth past
    :data:`MAX_YAML_DEPTH`, keys that are not scalars, duplicate keys and over-long integers."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    if parser is None:
        base: tuple = (yaml.SafeLoader,)
    else:
        # libyaml's events, composed by the Python composer (first in the order, so its compose_node is the one
        # checked below and CParser's own composer is never used).
        base = (Composer, parser, SafeConstructor, Resolver)

    class Loader(*base):  # type: ignore[misc]
        def __init__(self, stream):
            if parser is None:
                yaml.SafeLoader.__init__(self, stream)
            else:
                parser.__init__(self, stream)
                Composer.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)

        def compose_node(self, parent, index):  # type: ignore[override]
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise ValueError(f"{where}, line {event.start_mark.line + 1}: YAML aliases (*name) are not allowed")
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    mark = self.peek_event().start_mark
                    raise ValueError(f"{where}, line {mark.line + 1}: nested deeper than {MAX_YAML_DEPTH} levels")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node, deep=False):  # type: ignore[override]
            seen = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ValueError(
                        f"{where}, line {key_node.start_mark.line + 1}: a key must be a plain name, not a list or mapping"
                    )
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise ValueError(f"{where}, line {key_node.start_mark.line + 1}: duplicate key {key!r}")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    def construct_int(loader, node):
        _check_int_chars(f"{where}, line {node.start_mark.line + 1}", node.value)
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _check_header(shape: tuple, dtype: np.dtype, where: str) -> None:
    if dtype.hasobject:
        raise ValueError(f"{where}: arrays of Python objects are not read (dtype {dtype})")
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if count > MAX_ARRAY_ELEMENTS:
        raise ValueError(f"{where}: shape {shape} has {count:,} elements; the limit is {MAX_ARRAY_ELEMENTS:,}")


def _npy_header(handle, where: str) -> tuple:
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f"{where}: unsupported .npy version {version}")
    except (ValueError, OSError) as err:
        if str(err).startswith(where):
            raise
        raise ValueError(f"{where}: not a readable .npy array ({err})") from None
    _check_header(shape, dtype, where)
    return shape


def load_array(path: str | Path, what: str = "array file") -> np.ndarray:
    """Read a ``.npy`` file, or the single (or ``logits``) array of an ``.npz``, within the size budget."""
    path = Path(path)
    where = f"{what} {str(path)!r}"
    if not path.is_file():
        raise ValueError(f"{where} {not_a_file(path)}")
    import zipfile  # here, not at import: with shutil and threading it costs every command about 3 ms

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.endswith(".npy")]
            if not names:
                raise ValueError(f"{where}: the .npz holds no arrays")
            name = "logits.npy" if "logits.npy" in names else names[0]
            if len(names) > 1 and name != "logits.npy":
                raise ValueError(f"{where}: the .npz holds {len(names)} arrays; name the one to read 'logits'")
            with archive.open(name) as member:
                _npy_header(member, where)
        with np.load(path, allow_pickle=False) as data:
            return np.asarray(data[name[:-4]])
    with path.open("rb") as handle:
        _npy_header(handle, where)
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as err:
        raise ValueError(f"{where}: not a readable .npy array ({err})") from None
