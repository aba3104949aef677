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
