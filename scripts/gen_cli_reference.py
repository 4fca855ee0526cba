"""Write docs/reference/cli.md, the CLI reference, from the parser the `specsim` command runs.

Every subcommand of ``specsim.cli.main.build_parser()`` gets its one-line summary, its description, a usage line and a
table of its flags with their help and the parser's default.  The page is generated, never edited by hand:
tests/test_docs.py regenerates it and fails when the committed page differs, so a flag added, renamed or re-described
shows up there in the same commit.

The usage line is built here from the parser's actions rather than by argparse's formatter, whose wrapping depends on
the terminal width and changes between Python versions: the page must be the same wherever the test runs.

    python scripts/gen_cli_reference.py            # writes docs/reference/cli.md
    python scripts/gen_cli_reference.py --check    # exit 1 if the committed page is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "reference" / "cli.md"
WIDTH = 100

HEADER = """# CLI reference

Every `specsim` command with its flags, generated from the parser the command runs
(`specsim.cli.main.build_parser()`) by `scripts/gen_cli_reference.py`; `tests/test_docs.py` fails when this page
differs from what the script writes now, so it cannot go stale. `specsim COMMAND --help` prints the same text.
The default column is the parser's own; where it is empty, the command takes the library's default, which the help
text names and the output prints with its source.
"""


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _value(action: argparse.Action) -> str:
    """What follows the flag: ``BATCH``, ``[NAME]``, nothing for a switch."""
    if action.nargs == 0:
        return ""
    m = _metavar(action)
    return {"?": f"[{m}]", "*": f"[{m} ...]", "+": f"{m} [{m} ...]"}.get(action.nargs, m)


def _argument(action: argparse.Action) -> str:
    """How the flag is written: ``--batch BATCH``, ``-v, --verbose``, ``NAME``."""
    if not action.option_strings:
        return _value(action)
    return f"{', '.join(action.option_strings)} {_value(action)}".strip()


def _synopsis(action: argparse.Action) -> str:
    """One flag in the usage line: its longest spelling, bracketed unless required."""
    if isinstance(action, argparse._SubParsersAction):
        return f"{_metavar(action)} ..."
    if not action.option_strings:
        return _argument(action)
    text = f"{max(action.option_strings, key=len)} {_value(action)}".strip()
    return text if action.required else f"[{text}]"


def _usage(prog: str, parser: argparse.ArgumentParser) -> str:
    words = [_synopsis(a) for a in _actions(parser)]
    lines, line = [], f"usage: {prog}"
    indent = " " * len(line)
    for word in words:
        if len(line) + 1 + len(word) > WIDTH and line.strip() != f"usage: {prog}":
            lines.append(line)
            line = indent
        line += " " + word
    return "\n".join(lines + [line])


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    from specsim.cli.main import resolve_help

    resolve_help(parser)  # help texts built only when printed
    return [a for a in parser._actions if a.help is not argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]


def _help(action: argparse.Action, prog: str) -> str:
    """The help text with argparse's %-placeholders filled, as ``--help`` prints it."""
    if not action.help:
        return ""
    params = dict(vars(action), prog=prog)
    params = {k: (v.__name__ if hasattr(v, "__name__") else v) for k, v in params.items() if v is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params


def _default(action: argparse.Action) -> str:
    value = action.default
    if value is None or value is argparse.SUPPRESS or action.nargs == 0:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) if value else ""
    return str(value)


def _cell(text: str) -> str:
    """Markdown table cell: pipes, asterisks and angle brackets escaped, one line."""
    text = " ".join(text.split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;")


def _code_cell(text: str) -> str:
    """A table cell in backticks: only the pipe needs escaping there (a code span shows everything else as written)."""
    return text.replace("|", "\\|")


def _section(name: str, summary: str, parser: argparse.ArgumentParser, level: int = 2) -> list[str]:
    prog = parser.prog
    out = [f"{'#' * level} {prog}", ""]
    if summary:
        out += [summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."), ""]
    if parser.description:
        out += [parser.description, ""]
    out += ["```text", _usage(prog, parser), "```", ""]
    rows = [a for a in _actions(parser) if not isinstance(a, argparse._SubParsersAction)]
    if rows:
        out += ["| argument | default | what it is |", "|---|---|---|"]
        out += [f"| `{_code_cell(_argument(a))}` | {_cell(_default(a))} | {_cell(_help(a, prog))} |" for a in rows]
        out.append("")
    if parser.epilog:
        out += [parser.epilog, ""]
    for sub in (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)):
        summaries = {c.dest: c.help or "" for c in sub._choices_actions}
        for child_name, child in sub.choices.items():
            out += _section(child_name, summaries.get(child_name, ""), child, level + 1)
    return out


def render() -> str:
    """The page's text, from the parser as it is now."""
    sys.path.insert(0, str(REPO))
    from specsim.cli.main import build_parser

    parser = build_parser()
    out = [HEADER, "## specsim", ""]
    if parser.description:
        out += [parser.description, ""]
    out += ["```text", _usage("specsim", parser), "```", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {c.dest: c.help or "" for c in sub._choices_actions}
    out += ["| command | what it does |", "|---|---|"]
    out += [
        f"| [`{name}`](#{_anchor(child.prog)}) | {_cell(summaries.get(name, ''))} |"
        for name, child in sub.choices.items()
    ]
    out.append("")
    if parser.epilog:
        out += [parser.epilog, ""]
    for name, child in sub.choices.items():
        out += _section(name, summaries.get(name, ""), child)
    return "\n".join(out).rstrip() + "\n"


def _anchor(heading: str) -> str:
    """The id MkDocs' toc extension gives a heading: lower case, spaces to dashes, other punctuation dropped."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return "-".join(kept.split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write docs/reference/cli.md from specsim's parser.")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the committed page differs from what would be written"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(REPO)} is stale: run python scripts/gen_cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
