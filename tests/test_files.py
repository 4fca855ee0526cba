"""specsim.core.files on its own (issue 37): the one line each OS error becomes, read again against what is on disk,
the checks a command runs before its work, folders made and removed again, and atomic writes that leave nothing
behind.  tests/test_output_paths.py runs the same through every command that writes."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

import specsim.core.files as files
from specsim.core.files import (
    OutputError,
    atomic_write_bytes,
    atomic_write_many,
    cannot_write,
    check_folder,
    check_output,
    make_folder,
    refuse_builtin,
    writing,
)
from specsim.core.names import as_flags


def _error(number: int, strerror: str | None = "") -> OSError:
    """The OS's error as it names the staging file (never the user's path)."""
    return OSError(number, os.strerror(number) if strerror == "" else strerror, "/elsewhere/.x.csv.abcd1234.tmp")


def _said(error: OutputError) -> tuple[str, str]:
    return error.reason, error.advice


# -- the one line ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "number, reason, advice",
    [
        (errno.ENAMETOOLONG, "file name too long", "choose a shorter name"),
        (errno.EROFS, "read-only file system", "choose a writable folder"),
        (errno.EACCES, "permission denied", "choose a folder you can write to"),
        (errno.EPERM, "permission denied", "choose a folder you can write to"),
        (errno.ENOSPC, "no space left on the device", "free some space or choose another disk"),
        (errno.EDQUOT, "disk quota exceeded", "free some space or choose another disk"),
        (errno.ELOOP, "it is a symlink loop", "remove the link or choose another name"),
        (errno.EISDIR, "it is a folder", "give a file name"),
    ],
)
def test_each_reason_the_os_gives_is_said_in_plain_words_with_what_to_do(tmp_path, number, reason, advice):
    out = tmp_path / "x.csv"
    error = cannot_write(out, _error(number))
    assert isinstance(error, ValueError) and _said(error) == (reason, advice)
    assert str(error) == f"cannot write {str(out)!r}: {reason} ({advice})" and error.path == out


def test_a_reason_without_plain_words_is_the_oss_own_in_lower_case(tmp_path):
    out = tmp_path / "x.csv"
    assert _said(cannot_write(out, _error(errno.EIO))) == (os.strerror(errno.EIO).lower(), "choose another path")
    assert _said(cannot_write(out, _error(errno.EIO, None))) == ("oserror", "choose another path")
    # A file that exists where a file goes is no file in the way: the OS's own words.
    out.write_text("")
    assert _said(cannot_write(out, _error(errno.EEXIST))) == ("file exists", "choose another path")


def test_a_missing_folder_is_told_from_one_that_takes_no_files(tmp_path):
    missing = tmp_path / "no" / "such" / "x.csv"
    assert _said(cannot_write(missing, _error(errno.ENOENT))) == (
        f"folder {str(missing.parent)!r} does not exist",
        "create it first",
    )
    # The folder is there and the OS still says no such file: it takes no new ones (/proc).
    there = tmp_path / "x.csv"
    assert _said(cannot_write(there, _error(errno.ENOENT))) == (
        f"folder {str(tmp_path)!r} takes no new files",
        "choose another folder",
    )
    # Parents that were to be made: the nearest folder that exists is the one that took nothing.
    assert _said(cannot_write(missing, _error(errno.ENOENT), folder=True, parents=True)) == (
        f"folder {str(tmp_path)!r} takes no new files",
        "choose another folder",
    )


def test_a_file_in_the_way_is_named_and_a_file_given_for_a_folder_is_said_to_be_one(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for number in (errno.ENOTDIR, errno.ENOENT, errno.EEXIST):
        assert _said(cannot_write(blocker / "sub" / "x.csv", _error(number))) == (
            f"a file is in the way of folder {str(blocker)!r}",
            "move it or choose another path",
        )
    assert _said(cannot_write(blocker, _error(errno.EEXIST), folder=True)) == (
        "it is a file, not a folder",
        "give a folder, or move the file",
    )
    # Written as a file (the default), the same path is no folder that a file blocks.
    assert _said(cannot_write(blocker, _error(errno.ENOENT)))[0] == f"folder {str(tmp_path)!r} takes no new files"


def test_writing_turns_an_os_error_inside_into_the_line_for_the_path_given(tmp_path):
    out = tmp_path / "missing" / "x.csv"
    with pytest.raises(OutputError) as refused:
        with writing(out):
            raise _error(errno.ENOENT)
    assert (
        str(refused.value) == f"cannot write {str(out)!r}: folder {str(out.parent)!r} does not exist (create it first)"
    )
    assert refused.value.__cause__ is None and refused.value.__suppress_context__
    folder = tmp_path / "a-file"
    folder.write_text("")
    with pytest.raises(OutputError, match="it is a file, not a folder"):
        with writing(folder, folder=True):
            raise _error(errno.EEXIST)
    with pytest.raises(OutputError, match="takes no new files"):
        with writing(tmp_path / "new" / "deeper", folder=True, parents=True):
            raise _error(errno.ENOENT)


# -- checks before the work ----------------------------------------------------------------------------------------------
def test_check_output_refuses_an_empty_name_a_wrong_suffix_and_a_folder_and_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match=r"^--plot needs a file name, got an empty one$"):
        check_output("  ", flag="--plot")
    # The default names the path as its caller gave it: the keyword to Python (atomic_write_many's files said "--out
    # needs a file name"), the command's --out inside as_flags, as main runs every command.
    with pytest.raises(ValueError, match=r"^path needs a file name, got an empty one$"):
        check_output("")
    with pytest.raises(ValueError, match=r"^path must end in \.csv, got"):
        check_output(tmp_path / "x.txt", (".csv",))
    with as_flags(), pytest.raises(ValueError, match=r"^--out needs a file name, got an empty one$"):
        check_output("")
    with as_flags(), pytest.raises(ValueError, match=r"^--out must end in \.csv, got"):
        check_output(tmp_path / "x.txt", (".csv",))
    with pytest.raises(ValueError) as refused:
        check_output(tmp_path / "x.txt", (".png", ".svg"), "--plot")
    assert str(refused.value) == f"--plot must end in .png or .svg, got {str(tmp_path / 'x.txt')!r}"
    with pytest.raises(OutputError, match=r": it is a folder \(give a file name\)$"):
        check_output(tmp_path)
    assert check_output(tmp_path / "x.png", (".png",)) == tmp_path / "x.png"
    assert check_output(tmp_path / "y.csv") == tmp_path / "y.csv"
    assert list(tmp_path.iterdir()) == []  # the staging file made to check the folder is gone


def test_check_output_reads_a_home_folder_and_refuses_the_builtin_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert check_output("~/x.csv") == tmp_path / "x.csv"
    with pytest.raises(ValueError, match="the built-in profiles in .* are never overwritten; choose another path$"):
        check_output(files.builtin_dir() / "x.yaml")
    with pytest.raises(ValueError, match="are never overwritten; choose another path$"):  # save_watch's, say
        files.atomic_write_bytes(files.builtin_dir() / "x.yaml", b"")
    with as_flags(), pytest.raises(ValueError, match="are never overwritten; choose another --out$"):
        check_output(files.builtin_dir() / "x.yaml")


def test_check_folder_takes_a_folder_that_exists_and_refuses_what_is_not_one(tmp_path):
    assert check_folder(tmp_path) == tmp_path
    missing = tmp_path / "missing"
    with pytest.raises(OutputError) as refused:
        check_folder(missing)
    assert str(refused.value) == f"cannot write {str(missing)!r}: no such folder (create it first)"
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="it is a file, not a folder"):
        check_folder(blocker)
    with pytest.raises(OutputError, match="a file is in the way of folder"):
        check_folder(blocker / "sub")


def test_a_symlink_loop_is_refused_before_anything_is_written(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for check in (refuse_builtin, check_output, check_folder):
        with pytest.raises(OutputError) as refused:
            check(loop)
        assert (
            str(refused.value)
            == f"cannot write {str(loop)!r}: it is a symlink loop (remove the link or choose another name)"
        )


# -- folders made ----------------------------------------------------------------------------------------------------------
def test_a_folder_made_for_files_is_removed_again_when_they_fail(tmp_path):
    made = tmp_path / "a" / "b"
    with pytest.raises(RuntimeError):
        with make_folder(made, parents=True) as folder:
            assert folder == made and made.is_dir()
            raise RuntimeError("a figure failed")
    assert list(tmp_path.iterdir()) == []  # both folders it made, deepest first
    # A folder that was there already is kept; one another writer filled meanwhile is kept with its parents.
    with pytest.raises(RuntimeError):
        with make_folder(tmp_path):
            raise RuntimeError
    assert tmp_path.is_dir()
    with pytest.raises(RuntimeError):
        with make_folder(made, parents=True):
            (made / "theirs").write_text("")
            raise RuntimeError
    assert (made / "theirs").is_file()
    with make_folder(tmp_path / "c") as folder:
        (folder / "x").write_text("kept")
    assert (tmp_path / "c" / "x").read_text() == "kept"


def test_make_folder_without_parents_refuses_a_missing_parent(tmp_path):
    with pytest.raises(OutputError, match="does not exist \\(create it first\\)"):
        with make_folder(tmp_path / "no" / "figures"):
            pass
    assert list(tmp_path.iterdir()) == []


# -- atomic writes ---------------------------------------------------------------------------------------------------------
def test_an_atomic_write_has_the_data_the_permissions_of_open_and_no_staging_file(tmp_path):
    umask = os.umask(0o022)
    try:
        out = atomic_write_bytes(tmp_path / "x.bin", b"\x00data")
    finally:
        os.umask(umask)
    assert out == tmp_path / "x.bin" and out.read_bytes() == b"\x00data"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]


def test_a_long_name_gets_a_staging_name_the_file_system_takes(tmp_path):
    # 244 bytes is a legal name; its staging name repeats at most 200 of them.
    out = tmp_path / ("n" * 240 + ".csv")
    atomic_write_bytes(out, b"x")
    assert out.read_bytes() == b"x" and len(list(tmp_path.iterdir())) == 1
    fd, staging = files._open_staging(out)
    os.close(fd)
    name = Path(staging).name
    assert Path(staging).parent == tmp_path and name.startswith("." + "n" * 200 + ".") and name.endswith(".tmp")
    assert not name.startswith("." + "n" * 201)
    Path(staging).unlink()


def test_a_bare_file_name_stages_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fd, staging = files._open_staging(Path("short.csv"))
    os.close(fd)
    assert Path(staging).resolve().parent == tmp_path.resolve() and Path(staging).name.startswith(".short.csv.")
    Path(staging).unlink()
    assert atomic_write_bytes("short.csv", b"y") == Path("short.csv") and (tmp_path / "short.csv").read_bytes() == b"y"


def test_a_failed_move_leaves_the_old_file_and_no_staging_file(tmp_path, monkeypatch):
    out = tmp_path / "x.csv"
    out.write_text("old")

    def refuse(*args):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OutputError, match="cannot write .*x.csv"):
        atomic_write_bytes(out, b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["x.csv"] and out.read_text() == "old"


def test_several_files_are_written_all_or_none(tmp_path, monkeypatch):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    assert atomic_write_many([(a, b"1"), (b, b"2")]) == [a, b] and a.read_bytes() == b"1" and b.read_bytes() == b"2"
    real = os.replace
    moved = []

    def second_fails(src, dst):
        if moved:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        moved.append(dst)
        real(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(OutputError, match="no space left on the device"):
        atomic_write_many([(a, b"3"), (b, b"4")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]  # no staging file left
    assert b.read_bytes() == b"2"


def _drain(fifo: Path) -> tuple:
    """A reader of the named pipe ``fifo`` on a thread (a pipe's writer waits for one), and what it read."""
    import threading

    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    return reader, got


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_or_device_is_written_in_place_never_replaced_by_a_file(tmp_path):
    """--out /dev/null run as root replaced the null device with a regular file (the data staged beside it and moved
    over it), for every program on the machine.  A destination that is a device or a pipe is written as a shell
    writes it: it stays what it was and gets the data; its folder gets no staging file.  A named pipe stands in for
    the device (making one needs no root)."""
    for write in (
        lambda path: atomic_write_bytes(path, b"one"),
        lambda path: atomic_write_many([(path, b"one")]),
    ):
        folder = tmp_path / f"f{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        fifo = folder / "out.csv"
        os.mkfifo(fifo)
        assert check_output(fifo, (".csv",)) == fifo
        reader, got = _drain(fifo)
        write(fifo)
        reader.join(timeout=60)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the pipe was replaced by a file"
        assert got == [b"one"] and sorted(p.name for p in folder.iterdir()) == ["out.csv"]
    # the null device itself, where the machine has one: still a device after a write (no root needed to write it)
    null = Path(os.devnull)
    if null.exists() and stat.S_ISCHR(os.stat(null).st_mode):
        atomic_write_bytes(null, b"gone")
        assert stat.S_ISCHR(os.stat(null).st_mode)


def test_every_text_reader_reads_a_utf8_file_with_a_byte_order_mark_as_its_text(tmp_path, capsys):
    # Windows tools save UTF-8 with a byte-order mark: a trace's header read as '\ufeffarrival_s' and was refused, a
    # saved /metrics page's first line was 'not a Prometheus sample'.  read_text is the one reader that drops it.
    from specsim.cli.main import main

    text = "arrival_s,prompt_tokens,output_tokens\n0.0,1000,256\n"
    path = tmp_path / "trace.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert files.read_text(path, "trace") == text
    page = tmp_path / "metrics.txt"
    page.write_bytes(b"\xef\xbb\xbf" + (Path(__file__).parents[1] / "examples" / "vllm-metrics.txt").read_bytes())
    assert main(["alpha", "--metrics", str(page)]) == 0
    assert "implied alpha = 0.7979" in capsys.readouterr().out
