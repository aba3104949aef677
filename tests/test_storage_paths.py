"""ragexam.storage.paths: default locations, and output paths checked before any work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragexam.errors import InputError
from ragexam.storage.paths import cache_dir, check_output_dir, check_output_file, history_path


def test_the_suite_never_uses_the_real_cache():
    real = Path.home() / ".cache" / "ragexam"
    assert cache_dir() != real
    assert Path(os.environ["RAGEXAM_CACHE_DIR"]) == cache_dir()


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "a"
    monkeypatch.delenv("RAGEXAM_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "ragexam"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "ragexam"


def test_history_path_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGEXAM_HISTORY", str(tmp_path / "h.db"))
    monkeypatch.setenv("RAGEXAM_HOME", str(tmp_path / "rh"))
    assert history_path() == tmp_path / "h.db"
    monkeypatch.delenv("RAGEXAM_HISTORY")
    assert history_path() == tmp_path / "rh" / "history.sqlite3"


def test_output_file_that_is_a_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory") as e:
        check_output_file(tmp_path, option="--report")
    assert "--report" in str(e.value)


def test_output_file_under_a_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_output_file(f / "r.html", option="-o")
    with pytest.raises(InputError, match="is a file"):
        check_output_file(f / "deeper" / "r.html", option="-o")


def test_output_file_fine_paths_create_nothing(tmp_path):
    assert check_output_file(tmp_path / "new" / "r.html", option="-o") == tmp_path / "new" / "r.html"
    assert not (tmp_path / "new").exists()
    existing = tmp_path / "r.html"
    existing.write_text("old")
    assert check_output_file(existing, option="-o") == existing


def test_output_dir(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(InputError, match="is a file; expected a folder"):
        check_output_dir(f, option="--out")
    with pytest.raises(InputError, match="is a file"):
        check_output_dir(f / "sub", option="--out")
    assert check_output_dir(tmp_path / "a" / "b", option="--out") == tmp_path / "a" / "b"
    assert check_output_dir(tmp_path, option="--out") == tmp_path


def test_output_in_read_only_folder(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == ro else real_access(p, mode))
    with pytest.raises(InputError, match="permission denied"):
        check_output_file(ro / "r.html", option="-o")
    with pytest.raises(InputError, match="permission denied"):
        check_output_dir(ro / "out", option="--out")


def test_an_output_file_that_is_a_device_or_a_fifo_is_refused_and_left_as_it_was(tmp_path):
    """A write replaces a file whole (a new file renamed into place): over /dev/null it would replace the device."""
    from ragexam.storage.atomic import write_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target, kind in ((Path(os.devnull), "a device"), (fifo, "a FIFO")):
        with pytest.raises(InputError, match=f"is {kind}.*not a regular file.*Fix: give a regular file's path"):
            check_output_file(target, option="--report")
        with pytest.raises(InputError, match=f"is {kind}"):
            write_file(target, "x")
    assert Path(os.devnull).is_char_device() and fifo.is_fifo()


def test_an_output_file_behind_a_link_updates_the_file_it_points_to(tmp_path):
    from ragexam.storage.atomic import write_file

    (tmp_path / "pub").mkdir()
    target = tmp_path / "pub" / "report.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert check_output_file(link, option="-o") == link
    write_file(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.html", "pub"]  # no temporary file left


def test_an_output_in_a_folder_that_refuses_new_files_is_refused_before_any_work(tmp_path, monkeypatch):
    """Permissions can say yes where the folder still refuses (``/proc``, a read-only mount, even for root): the
    check makes a file there and removes it."""
    import tempfile

    real = tempfile.mkstemp

    def refusing(*args, dir=None, **kw):
        if dir is not None and Path(dir) == tmp_path / "ro":
            raise OSError(30, "Read-only file system")
        return real(*args, dir=dir, **kw)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", refusing)
    with pytest.raises(InputError, match=r"cannot write into .*ro' \(Read-only file system\); choose another path"):
        check_output_file(tmp_path / "ro" / "r.html", option="--report")
    with pytest.raises(InputError, match="Read-only file system"):
        check_output_dir(tmp_path / "ro" / "out", option="--out")
    assert check_output_file(tmp_path / "r.html", option="--report") == tmp_path / "r.html"
    assert list((tmp_path / "ro").iterdir()) == []
    if Path("/proc/self").is_dir():  # the case that was met: root may write anywhere but in /proc
        with pytest.raises(InputError, match="cannot write into '/proc'"):
            check_output_file("/proc/r.html", option="--report")
