"""The ``specsim`` command: the parser assembled from the command modules, and the one place errors become one line.

Each command module (:mod:`specsim.cli.model`, :mod:`~specsim.cli.deploy`, :mod:`~specsim.cli.load`,
:mod:`~specsim.cli.measure`, :mod:`~specsim.cli.engine`, :mod:`~specsim.cli.info`) declares each command's flags
beside the ``run_<command>`` handler that uses them; the flag groups several commands share are in
:mod:`specsim.cli.flags`.  Errors in user input (``ValueError``, ``KeyError``, ``OSError``) become one line on stderr
and exit status 2.

The hot path (``specsim optimal-gamma``) imports numpy and PyYAML only; matplotlib, pandas, scipy and torch are
imported inside the commands that need them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import re
import sys
from typing import Sequence

from specsim import __version__

__all__ = ["COMMANDS", "main", "build_parser"]

#: The commands in the order ``specsim --help`` lists them, each with the module that declares its flags and runs it.
COMMANDS = {
    "optimal-gamma": "model",
    "explain": "model",
    "speedup": "model",
    "steptime": "model",
    "alpha": "info",
    "capacity": "model",
    "schedule": "deploy",
    "compare": "model",
    "serve-sim": "load",
    "serve-sweep": "load",
    "toy": "info",
    "acceptance": "info",
    "measure": "measure",
    "measure-loop": "measure",
    "calibrate": "measure",
    "bench-plan": "engine",
    "calibrate-engine": "calibrate",
    "watch": "watch",
    "replay": "replay",
    "compose-kernels": "measure",
    "hardware": "info",
    "engines": "info",
    "models": "info",
    "figures": "info",
    "reproduce": "info",
}
#: The answering commands whose --json carries the notes their text says on stderr (docs/reference/json.md, "Every
#: answer": :func:`specsim.cli.report.notes_in_json`).
NOTES_IN_JSON = frozenset(
    ["optimal-gamma", "explain", "speedup", "steptime", "capacity", "schedule", "compare", "serve-sim", "serve-sweep"]
)


def _help_width() -> int:
    """argparse's default width: the terminal's columns less 2, read as :func:`shutil.get_terminal_size` documents it
    (``$COLUMNS``, else the terminal of ``sys.__stdout__``, else 80) but without importing shutil, which with its bz2
    and lzma costs every command about 1.5 ms (issue 28)."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns - 2


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout at :func:`_help_width` (argparse makes one formatter for every flag added)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, _help_width() if width is None else width)


class UsageError(SystemExit):
    """argparse's exit (status 2) on a usage error, holding the line it printed after ``error:``, for a command whose
    ``--json`` says its failures on stdout too (:func:`_json_failure`)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message instead of usage plus error, and no abbreviated flags."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        # No abbreviations: argparse would take --gamma for --gamma-max, and a command that has no --gamma would answer
        # another question than the one asked (issue 37).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        line = f"{message} (see {self.prog} --help)"
        sys.stderr.write(f"{self.prog}: error: {line}\n")
        raise UsageError(line)

    def format_help(self) -> str:
        resolve_help(self)
        return super().format_help()


def resolve_help(parser: argparse.ArgumentParser) -> None:
    """Replace each callable help of ``parser``'s flags by the text it returns.  A help text that costs work to build
    (--alpha's lists every drafter kind's published default, which imports every kind) is given as a callable, so that a
    run builds it only when help is printed."""
    for action in parser._actions:
        if callable(action.help):
            action.help = action.help()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` the parser of that one command (what a run needs: the other commands'
    modules are not imported)."""
    parser = _Parser(
        prog="specsim",
        description="A performance model of speculative decoding: step times, rounds, speedup, the optimal gamma or tree, "
        "engine schedules, a serving simulation and calibration to your own engine.",
        epilog="Start with: specsim optimal-gamma --alpha 0.8",
    )
    parser.add_argument("--version", action="version", version=f"specsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"specsim.cli.{module}").PARSERS[name](sub)
    for command in sub.choices.values():
        has_json = any("--json" in a.option_strings for a in command._actions)
        command.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            help="print every source and assumption behind the numbers (by default one line"
            + ("; --json has all)" if has_json else ")"),
        )
    return parser


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Unknown arguments, reported by the command's own parser (its --help, not the top level's) with the flag it has
    that is nearest each unknown one (exits 2)."""
    import difflib

    command = getattr(args, "command", None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    owner = sub.choices[command] if sub is not None and command in sub.choices else parser
    flags = [f for action in owner._actions for f in action.option_strings if f.startswith("--")]
    near = []
    for word in extra:
        if word.startswith("-"):
            flag = word.split("=")[0]
            # The closest flag, and those this command spells with a prefix (--batch where schedule has --max-batch).
            near += difflib.get_close_matches(flag, flags, 1, 0.6)
            near += [f for f in flags if f.endswith("-" + flag.lstrip("-")) and f != flag]
    owner.error(
        f"unrecognized arguments: {' '.join(extra)}"
        + (f"; did you mean {', '.join(dict.fromkeys(near))}?" if near else "")
    )


def _times_before_now(argv: list[str]) -> list[str]:
    """``argv`` with a time before now given as its own word (``--start -24h``) joined to its option
    (``--start=-24h``): argparse reads a word starting with a dash as an option, so the form the help gives would
    otherwise be refused as "expected one argument".

    >>> _times_before_now(["watch", "--start", "-24h", "--end", "-1h", "--once"])
    ['watch', '--start=-24h', '--end=-1h', '--once']
    """
    out: list[str] = []
    for word in argv:
        if out and out[-1] in ("--start", "--end") and re.fullmatch(r"-\d+(\.\d+)?(ms|s|m|h|d|w)?", word):
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    With ``argv`` None (the ``specsim`` script and ``python -m specsim``) the process runs this one command and ends,
    so the cyclic garbage collector is paused while the parser loads the command's modules and those objects are then
    frozen out of it (:func:`gc.freeze`): they live until exit, and collecting them during the imports and again at
    shutdown was about 7% of a cold ``specsim optimal-gamma``'s instructions (issue 28).  The command itself runs with
    the collector on.  A caller that passes ``argv`` (a test, a notebook) keeps its collector as it was.
    """
    as_process = argv is None
    argv = _times_before_now(sys.argv[1:] if argv is None else list(argv))
    first = next((a for a in argv if not a.startswith("-")), None)
    collecting = as_process and gc.isenabled()
    if collecting:
        gc.disable()
    try:
        parser = build_parser(first if first in COMMANDS else None)
        args, extra = parser.parse_known_args(argv)
        # the option strings the user typed, for flags_given: a flag given at its default's value is still given
        args.typed_flags = frozenset(a.split("=", 1)[0] for a in argv if a.startswith("-"))
        if extra:
            _unrecognized(parser, args, extra)
    except SystemExit as stop:  # argparse: --help, --version or a usage error
        if isinstance(stop, UsageError) and "--json" in argv:
            _json_failure(first, stop.message)
        return int(stop.code or 0)
    except KeyboardInterrupt:  # Ctrl-C while the command's modules load
        return _interrupted(first, "--json" in argv)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "action", None) == "show" and not args.name:
        print(
            f"specsim {args.command} show: error: give a NAME (list them with: specsim {args.command})", file=sys.stderr
        )
        return 2
    from specsim.cli import report
    from specsim.cli.args import calibrated_context
    from specsim.core.names import as_flags

    report.VERBOSE = bool(getattr(args, "verbose", False))
    as_json = args.command in NOTES_IN_JSON and (
        getattr(args, "json", False) or getattr(args, "format", None) == "json"
    )
    try:
        # the library's errors name what the user gave: here its flags, not its keyword arguments (core.names)
        with as_flags():
            calibrated_context(args)
            with report.notes_in_json() if as_json else contextlib.nullcontext():
                return args.func(args)
    except BrokenPipeError:  # e.g. specsim ... | head
        return 0
    except KeyboardInterrupt:
        return _interrupted(args.command, getattr(args, "json", False))
    except KeyError as err:
        message = _key_error_said(err)
    except (ValueError, OSError) as err:
        message = str(err)
    message = _as_typed(parser, args, message)
    print(f"specsim {args.command}: error: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        _json_failure(args.command, message)
    return 2


def _key_error_said(err: KeyError) -> str:
    """A KeyError's line: an unknown name (:class:`~specsim.core.limits.UnknownName`) as written, which lists the known
    ones; any other is a key the code looked up and did not find, whose bare name (``implementation``) told the user
    nothing: it names the key and where it was looked up, as a fault of specsim's unless the input is off.

    >>> from specsim.core.limits import UnknownName
    >>> _key_error_said(UnknownName("unknown model 'x'; known: a, b"))
    "unknown model 'x'; known: a, b"
    >>> try:
    ...     {}["implementation"]
    ... except KeyError as err:
    ...     said = _key_error_said(err)
    >>> said.split(" (")[0]
    "no key 'implementation' where specsim looked one up"
    """
    import os.path
    import traceback

    from specsim.core.limits import UnknownName

    if isinstance(err, UnknownName):
        return err.args[0] if err.args else str(err)
    key = err.args[0] if err.args else "?"
    frames = traceback.extract_tb(err.__traceback__)
    where = (
        f" ({os.path.basename(frames[-1].filename)} line {frames[-1].lineno}, in {frames[-1].name})" if frames else ""
    )
    return (
        f"no key {key!r} where specsim looked one up{where}: a fault of specsim's where the input is as its docs "
        "describe (please report it with this command), else a file or table missing that key"
    )


def _as_typed(parser: argparse.ArgumentParser, args: argparse.Namespace, message: str) -> str:
    """``message`` naming each flag the user typed as typed: where a flag has aliases (bench-plan's --input-tokens and
    --input-len) and the user typed one, an error built with another (the library names one) names the typed one.

    >>> p = argparse.ArgumentParser()
    >>> sub = p.add_subparsers(dest="command")
    >>> _ = sub.add_parser("plan").add_argument("--input-tokens", "--input-len", dest="input_tokens")
    >>> args = argparse.Namespace(command="plan", typed_flags=frozenset({"--input-len"}))
    >>> _as_typed(p, args, "--input-tokens needs two prompt lengths")
    '--input-len needs two prompt lengths'
    """
    typed = getattr(args, "typed_flags", frozenset())
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if not typed or sub is None or args.command not in sub.choices:
        return message
    for action in sub.choices[args.command]._actions:
        given = [f for f in action.option_strings if f in typed]
        if len(action.option_strings) < 2 or len(given) != 1:
            continue
        for alias in action.option_strings:
            if alias != given[0] and alias.startswith("--"):
                message = re.sub(rf"(?<![\w-]){re.escape(alias)}(?![\w-])", given[0], message)
    return message


def _interrupted(command: str | None, as_json: bool = False) -> int:
    """Ctrl-C: one line and the shell's status for SIGINT (128 + 2); files are written whole or not at all.  With
    ``--json``, said on stdout too where the command says its failures there (:func:`_json_failure`)."""
    print(f"specsim {command}: interrupted" if command else "specsim: interrupted", file=sys.stderr)
    if as_json:
        _json_failure(command, "interrupted", 130)
    return 130


def _json_failure(command: str | None, message: str, exit_code: int = 2) -> None:
    """With ``--json``, a failure said on stdout too, where the command's module declares how (``JSON_FAILURES``, beside
    its ``PARSERS``): ``specsim watch`` writes a stream of JSON lines, and a program reading it gets the record the
    stream ends with, its ``error`` the message of the stderr line, rather than nothing; its ``exit_code`` the
    command's status (2, or 130 for Ctrl-C)."""
    if command not in COMMANDS:
        return
    module = importlib.import_module(f"specsim.cli.{COMMANDS[command]}")
    hook = getattr(module, "JSON_FAILURES", {}).get(command)
    if hook is not None:
        hook(message, exit_code)
