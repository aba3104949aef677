"""``ragexam.exec.beside.Beside``: a function run in a child Python process beside this one, its result collected
later -- or computed here when the child cannot give it; the child takes this process's ``sys.path``, never
imports the caller's script again, and is stopped when its job is dropped."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time

from ragexam.exec.beside import Beside


def test_the_result_comes_from_a_child_process():
    job = Beside(os.getpid)
    assert job.started
    pid = job.result()
    assert job.where == "beside" and isinstance(pid, int) and pid != os.getpid()


def test_the_child_imports_what_this_process_can(tmp_path, monkeypatch):
    """A module importable here only through ``sys.path`` (a user's folder added at run time) imports in the
    child too: it takes the parent's ``sys.path``, not an environment variable."""
    (tmp_path / "only_here_mod.py").write_text(textwrap.dedent("""
        import os

        def twice(x, parent):
            if os.getpid() == parent:
                raise AssertionError("computed in the parent")
            return 2 * x
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    import only_here_mod

    job = Beside(only_here_mod.twice, 21, os.getpid())
    assert job.result() == 42 and job.where == "beside"


def test_a_child_that_fails_is_replaced_by_the_function_here(tmp_path, monkeypatch):
    (tmp_path / "fails_beside_mod.py").write_text(textwrap.dedent("""
        import os

        def here_only(parent):
            if os.getpid() != parent:
                raise RuntimeError("not in the child")
            return "here"
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fails_beside_mod

    job = Beside(fails_beside_mod.here_only, os.getpid())
    assert job.started and job.result() == "here" and job.where == "here"


def test_what_cannot_run_beside_runs_here(monkeypatch):
    job = Beside(lambda x: x + 1, 1)  # a lambda does not pickle: nothing is started
    assert not job.started and job.result() == 2 and job.where == "here"
    assert Beside(abs, -3, start=False).result() == 3
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    job = Beside(abs, -4)
    assert not job.started and job.result() == 4 and job.where == "here"


def test_a_dropped_job_stops_its_child():
    job = Beside(time.sleep, 60)
    proc = job._proc
    assert proc is not None and proc.poll() is None
    del job
    gc.collect()
    assert proc.wait(timeout=10) is not None


def test_a_script_without_a_main_guard_is_not_run_again(tmp_path):
    """``multiprocessing``'s spawn would import the caller's ``__main__`` again; the child here does not."""
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import os
        from ragexam.exec.beside import Beside

        print("script body ran", flush=True)
        job = Beside(os.getpid)
        print("beside:", job.result() != os.getpid(), job.where, flush=True)
    """), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("script body ran") == 1 and "beside: True beside" in out.stdout
