"""Every command that writes a file or a folder, against paths it cannot write (issue 37).

Each row is a command and a path the OS refuses for a real reason (a folder where a file goes, a missing folder, a name
of 300 characters, a file where a folder goes, a symlink loop, /proc and /sys, a folder without write permission; a
read-only file system and a full disk are made by raising the OS's own error where specsim calls it).  The answer is
always exit status 2 and one line on stderr, ``cannot write '<the path given>': <reason> (<what to do>)``, which never
names the staging file; and nothing is left behind: no staging file, no folder half made, the files there unchanged.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import shlex
from pathlib import Path

import pytest

import specsim.core.files as files
from specsim.cli.main import main

REPO = Path(__file__).resolve().parent.parent
HAS_TORCH = importlib.util.find_spec("torch") is not None
MEASUREMENTS = "model,batch,tokens_per_seq,context,median_s\n" + "".join(
    f"llama-3.2-1b,{b},{q},0,{0.002 * (1 + b / 32) * q:.6f}\n" for b in (1, 2, 4, 8, 16, 32) for q in (1, 2)
)

#: Commands that write one file: the command with {out} for the path, and the suffix its file must take.
FILE_COMMANDS = {
    "calibrate-engine --out": (
        f"calibrate-engine --plain {REPO}/examples/bench/vllm-plain.jsonl --hardware h100 --out {{out}}",
        ".yaml",
    ),
    "calibrate --out": ("calibrate {tmp}/m.csv --hardware h100-sxm --out {out}", ".yaml"),
    "replay --out": ("replay --draft eagle3 --rates 0:3,10m --out {out}", ".txt"),
    "watch --alert-rules": ("watch --target llama-3.1-8b --draft eagle3 --gamma 3 --alert-rules {out}", ".yaml"),
    "watch --dashboard": ("watch --target llama-3.1-8b --draft eagle3 --gamma 3 --dashboard {out}", ".json"),
    "watch --plot": ("watch --draft eagle3 --url http://127.0.0.1:9/metrics --plot {out}", ".png"),
    "explain --plot": ("explain --plot {out}", ".png"),
    "serve-sim --csv": ("serve-sim --rate 4 --requests 50 --runs 1 --csv {out}", ".csv"),
    "serve-sweep --plot": ("serve-sweep --rates 1,2 --requests 50 --plot {out}", ".png"),
    "measure --out": ("measure --model tiny-5m --device cpu --batch 1 --out {out}", ".csv"),
}
#: Commands that write a folder of files: bench-plan makes a new one, figures makes it with its parents, compose-kernels
#: makes it where its parent exists (it wrote only into one that existed).
FOLDER_COMMANDS = {
    "bench-plan --out": "bench-plan --engine vllm --draft eagle3 --out {out}",
    "figures --out": "figures --only roofline --out {out}",
    "compose-kernels --out": "compose-kernels --models llama-3.2-1b --out {out}",
}


def _refusing(number: int):
    def refuse(*args, **kwargs):
        raise OSError(number, os.strerror(number), "/somewhere/.x.yaml.abcd1234.tmp")

    return refuse


def _read_only(monkeypatch, folder: bool = False) -> None:
    """A read-only file system: what the OS raises creating a file (or a folder) there; no test can mount one."""
    monkeypatch.setattr(files, "_open_staging", _refusing(errno.EROFS))
    if folder:
        monkeypatch.setattr(os, "mkdir", _refusing(errno.EROFS))


def _no_permission(out: Path) -> Path:
    if os.geteuid() == 0:
        pytest.skip("root writes into a folder of mode 0o500")
    folder = out / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


def _refused_by(folder: str) -> Path:
    """A path in /proc or /sys, which take no new files even from root (skipped where they do, or are absent)."""
    probe = Path(folder) / "specsim-probe"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_EXCL))
    except OSError:
        return Path(folder)
    probe.unlink()
    pytest.skip(f"{folder} takes new files here")


def _file_path(case: str, out: Path, ext: str, monkeypatch) -> tuple[Path, str]:
    """The path for ``case`` and the words its one line must end with."""
    if case == "a folder":
        (out / f"adir{ext}").mkdir()
        return out / f"adir{ext}", "it is a folder (give a file name)"
    if case == "missing folder":
        return out / "nowhere" / f"x{ext}", f"folder '{out / 'nowhere'}' does not exist (create it first)"
    if case == "name too long":
        return out / ("a" * 300 + ext), "file name too long (choose a shorter name)"
    if case == "file in the way":
        (out / "afile").write_text("mine")
        return (
            out / "afile" / f"x{ext}",
            f"a file is in the way of folder '{out / 'afile'}' (move it or choose another path)",
        )
    if case == "symlink loop":
        (out / f"loop{ext}").symlink_to(out / f"loop{ext}")
        return out / f"loop{ext}", "it is a symlink loop (remove the link or choose another name)"
    if case == "read-only":
        _read_only(monkeypatch)
        return out / f"x{ext}", "read-only file system (choose a writable folder)"
    if case == "no permission":
        return _no_permission(out) / f"x{ext}", "permission denied (choose a folder you can write to)"
    if case == "/proc":
        return _refused_by("/proc") / f"specsim{ext}", "folder '/proc' takes no new files (choose another folder)"
    assert case == "/sys"
    return _refused_by("/sys") / f"specsim{ext}", "permission denied (choose a folder you can write to)"


FILE_CASES = [
    "a folder",
    "missing folder",
    "name too long",
    "file in the way",
    "symlink loop",
    "read-only",
    "no permission",
    "/proc",
    "/sys",
]


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root`` with its content (None for a folder or a link)."""
    seen = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            seen[str(path)] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return seen


def _run(command: str, path: Path, tmp_path: Path, capsys) -> tuple[int, list[str], str]:
    argv = shlex.split(command.replace("{tmp}", str(tmp_path)).replace("{out}", shlex.quote(str(path))))
    code = main(argv)
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if ": error: " in line], err


def _assert_one_line(code, lines, err, path, reason, tmp_path, before) -> None:
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert f"cannot write '{path}" in lines[0] and lines[0].endswith(reason), lines[0]
    assert ".tmp" not in err.replace(str(tmp_path), ""), err  # the staging file is never named
    assert _tree(tmp_path / "out") == before  # nothing written, nothing half made, nothing left behind


@pytest.fixture
def out(tmp_path, monkeypatch):
    (tmp_path / "m.csv").write_text(MEASUREMENTS)
    monkeypatch.setenv("SPECSIM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()  # kernel tables some commands build are cached beside, not among the outputs
    folder = tmp_path / "out"
    folder.mkdir()
    yield folder
    for locked in folder.glob("locked"):
        locked.chmod(0o700)  # so that pytest can remove it


@pytest.mark.parametrize("case", FILE_CASES)
@pytest.mark.parametrize("command", list(FILE_COMMANDS))
def test_a_file_that_cannot_be_written_is_one_line(command, case, out, tmp_path, monkeypatch, capsys):
    if command == "measure --out" and not HAS_TORCH:
        pytest.skip("measure needs torch")
    template, ext = FILE_COMMANDS[command]
    path, reason = _file_path(case, out, ext, monkeypatch)
    before = _tree(out)
    code, lines, err = _run(template, path, tmp_path, capsys)
    _assert_one_line(code, lines, err, path, reason, tmp_path, before)


FOLDER_ROWS = [
    (
        "bench-plan --out",
        "file as the folder",
        "it exists and is not an empty folder (bench-plan writes a new one: give a new name)",
    ),
    ("figures --out", "file as the folder", "it is a file, not a folder (give a folder, or move the file)"),
    ("compose-kernels --out", "file as the folder", "it is a file, not a folder (give a folder, or move the file)"),
    ("bench-plan --out", "missing folder", "folder '{out}/nowhere' does not exist (create it first)"),
    ("compose-kernels --out", "missing folder", "folder '{out}/nowhere' does not exist (create it first)"),
    *[
        (command, case, reason)
        for command in FOLDER_COMMANDS
        for case, reason in [
            ("file in the way", "a file is in the way of folder '{out}/afile' (move it or choose another path)"),
            ("name too long", "file name too long (choose a shorter name)"),
            ("symlink loop", "it is a symlink loop (remove the link or choose another name)"),
            ("read-only", "read-only file system (choose a writable folder)"),
            ("no permission", "permission denied (choose a folder you can write to)"),
            ("/proc", "folder '/proc' takes no new files (choose another folder)"),
            ("/sys", "permission denied (choose a folder you can write to)"),
        ]
    ],
]


def _folder_path(command: str, case: str, out: Path, monkeypatch) -> Path:
    if case == "file as the folder":
        (out / "afile").write_text("mine")
        return out / "afile"
    if case == "missing folder":
        return out / "nowhere" / "plan"
    if case == "file in the way":
        (out / "afile").write_text("mine")
        return out / "afile" / "plan"
    if case == "name too long":
        return out / ("a" * 300)
    if case == "symlink loop":
        (out / "loop").symlink_to(out / "loop")
        return out / "loop"
    if case == "read-only":
        _read_only(monkeypatch, folder=True)
        return out / "plan"
    if case == "no permission":
        locked = _no_permission(out)
        return locked / "plan"
    return _refused_by(case) / "specsim"


@pytest.mark.parametrize("command, case, reason", FOLDER_ROWS, ids=[f"{r[0]}-{r[1]}" for r in FOLDER_ROWS])
def test_a_folder_that_cannot_be_written_is_one_line(command, case, reason, out, tmp_path, monkeypatch, capsys):
    path = _folder_path(command, case, out, monkeypatch)
    before = _tree(out)
    code, lines, err = _run(FOLDER_COMMANDS[command], path, tmp_path, capsys)
    _assert_one_line(code, lines, err, path, reason.format(out=out), tmp_path, before)


def test_figures_makes_the_folders_it_promises(out, capsys):
    assert main(["figures", "--only", "roofline", "--out", str(out / "new" / "figs")]) == 0
    assert sorted(p.name for p in (out / "new" / "figs").iterdir()) == ["roofline.png", "roofline.svg"]


#: What a disk that fills while the file is written says: the last step of staging (fsync) fails after the data went in.
FULL_DISK = [
    ("calibrate-engine --out", ".yaml"),
    ("calibrate --out", ".yaml"),
    ("replay --out", ".txt"),
    ("watch --alert-rules", ".yaml"),
    ("watch --dashboard", ".json"),
    ("explain --plot", ".png"),
    ("serve-sim --csv", ".csv"),
    ("serve-sweep --plot", ".png"),
    ("bench-plan --out", ""),
    ("figures --out", ""),
    ("compose-kernels --out", ""),
]


@pytest.mark.parametrize("command, ext", FULL_DISK, ids=[c for c, _ in FULL_DISK])
def test_a_disk_full_at_the_last_write_leaves_nothing(command, ext, out, tmp_path, monkeypatch, capsys):
    """The checks before the work pass; the write at the end fails half-way: no staging file, no folder made, and the
    file already there is kept as it was."""
    if command in FOLDER_COMMANDS:
        template = FOLDER_COMMANDS[command]
        path = {"compose-kernels --out": out, "bench-plan --out": out / "plan"}.get(command, out / "new" / "plan")
    else:
        template, path = FILE_COMMANDS[command][0], out / f"x{ext}"
        path.write_text("the previous one")
    before = _tree(out)
    monkeypatch.setattr(os, "fsync", _refusing(errno.ENOSPC))
    code, lines, err = _run(template, path, tmp_path, capsys)
    _assert_one_line(
        code, lines, err, path, "no space left on the device (free some space or choose another disk)", tmp_path, before
    )


# -- the helper itself ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "number, words",
    [
        (errno.EISDIR, "it is a folder (give a file name)"),
        (errno.ENAMETOOLONG, "file name too long (choose a shorter name)"),
        (errno.EROFS, "read-only file system (choose a writable folder)"),
        (errno.EACCES, "permission denied (choose a folder you can write to)"),
        (errno.EPERM, "permission denied (choose a folder you can write to)"),
        (errno.ENOSPC, "no space left on the device (free some space or choose another disk)"),
        (errno.EDQUOT, "disk quota exceeded (free some space or choose another disk)"),
        (errno.ELOOP, "it is a symlink loop (remove the link or choose another name)"),
        (errno.EIO, "input/output error (choose another path)"),
    ],
)
def test_each_reason_is_said_plainly_with_what_to_do(number, words, tmp_path):
    err = OSError(number, os.strerror(number), str(tmp_path / ".x.csv.abcd1234.tmp"))
    assert str(files.cannot_write(tmp_path / "x.csv", err)) == f"cannot write '{tmp_path / 'x.csv'}': {words}"


def test_a_legal_name_of_250_characters_is_written(tmp_path):
    """The staging name repeats at most 200 bytes of the name, so a legal name never makes an illegal staging name."""
    path = tmp_path / ("é" * 120 + ".csv")  # 244 bytes in UTF-8
    assert files.atomic_write_many([(path, b"a")]) == [path] and path.read_bytes() == b"a"
    assert files.atomic_write_bytes(path, b"b").read_bytes() == b"b"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_failed_move_leaves_neither_staging_file_nor_half_the_files(tmp_path, monkeypatch):
    """atomic_write_many: the second file's move fails (a folder appeared there): the first was moved, the second's
    staging file is removed, and the error names the second path."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    replace = os.replace

    def racing(src, dst):
        if Path(dst) == second:
            second.mkdir()
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", racing)
    with pytest.raises(files.OutputError, match=r"^cannot write '.*b\.txt': it is a folder \(give a file name\)$"):
        files.atomic_write_many([(first, b"1"), (second, b"2")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"] and second.is_dir()
