"""Every output path is checked before any work: a bad ``--out``/``--report``/``--history`` ends in a
one-line error naming the option (exit status 2, no traceback) and nothing was retrieved, judged,
generated, recorded or left behind.

Before: ``report -o DIR`` raised IsADirectoryError at the rename, ``report -o FILE/r.html`` a
FileExistsError from mkdir, ``run --report DIR`` and ``score --report DIR`` did so after the whole run or
after scoring and judging (the run id never printed), and ``answer --out DIR`` after every generation
call had been paid for, leaving ``DIR.tmp`` behind.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ragexam.cli import main
from test_report_fixtures import make_run, write_run
from test_score_fixtures import write_case


class _Endpoint:
    """A loopback OpenAI-compatible endpoint that only counts requests (and answers 500)."""

    def __init__(self):
        self.requests = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                endpoint.requests.append((self.path, self.rfile.read(n)))
                self.send_response(500)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "stub"}}')

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint(monkeypatch):
    e = _Endpoint()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-output-paths")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield e
    e.close()


@pytest.fixture
def no_retrieval(monkeypatch):
    """Counts calls of the retrieval run (ragexam.analysis.exam.run.run); none may happen."""
    import ragexam.analysis.exam.run as run_module

    calls = []
    real = run_module.run

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "run", counted)
    return calls


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


def _refused(code, err, option):
    assert code == 2, err
    assert "Traceback" not in err and err.startswith("error: "), err
    assert option in err, err


def _history_untouched():
    assert not Path(os.environ["RAGEXAM_HISTORY"]).exists(), "something was recorded"


@pytest.fixture
def bad(tmp_path):
    """(an existing folder, a path under a file)."""
    folder = tmp_path / "existing-dir"
    folder.mkdir()
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    return folder, tmp_path / "a-file" / "out"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    summary, rows = make_run(n_questions=8, seed=4, n_resamples=20, n_permutations=20)
    return write_run(tmp_path_factory.mktemp("run") / "run", summary, rows)


# --- ragexam report ----------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["dir", "under-file"])
def test_report_out(run_dir, bad, which, capsys):
    target = bad[0] if which == "dir" else bad[1] / "r.html"
    code, _, err = _cli(["report", run_dir, "-o", target], capsys)
    _refused(code, err, "--out")
    assert list(bad[0].iterdir()) == [] and not list(run_dir.parent.glob("**/.report-*"))


def test_write_report_checks_before_rendering(run_dir, bad, monkeypatch):
    from ragexam.errors import InputError
    from ragexam.report import html
    from ragexam.storage.runfolder import read_run_folder as load_run_dir

    monkeypatch.setattr(html, "render_report", lambda *a, **k: pytest.fail("rendered before the path was checked"))
    data = load_run_dir(run_dir)
    for target in (bad[0], bad[1] / "r.html"):
        with pytest.raises(InputError, match="out_path"):
            html.write_report(data.summary, data.per_question, target)


# --- ragexam run / demo ------------------------------------------------------------------------

SMALL = ["--corpus", "it_helpdesk", "--qa", "it_helpdesk", "-r", "bm25:whitespace"]


@pytest.mark.parametrize("option,which", [("--report", "dir"), ("--report", "under-file"), ("--out", "file"),
                                          ("--out", "under-file"), ("--history", "dir")])
def test_run_outputs(bad, option, which, no_retrieval, capsys, tmp_path):
    target = {"dir": bad[0], "under-file": bad[1] / "x.html", "file": bad[1].parent}[which]
    code, out, err = _cli(["run", *SMALL, option, target], capsys)
    _refused(code, err, option)
    assert no_retrieval == [], "the run started before the output path was checked"
    _history_untouched()
    assert list(bad[0].iterdir()) == []


@pytest.mark.parametrize("option", ["--report", "--out"])
def test_demo_outputs(bad, option, no_retrieval, capsys):
    target = bad[1] / "x"
    code, _, err = _cli(["demo", option, target], capsys)
    _refused(code, err, option)
    assert no_retrieval == []
    _history_untouched()


# --- ragexam score -----------------------------------------------------------------------------


@pytest.mark.parametrize("option,which", [("--report", "dir"), ("--report", "under-file"), ("--out", "under-file"),
                                          ("--history", "dir")])
def test_score_outputs(bad, option, which, endpoint, capsys, tmp_path):
    qa, _, answers, run = write_case(tmp_path / "case")
    target = bad[0] if which == "dir" else bad[1] / "x"
    code, _, err = _cli(["score", "--qa", qa, "--answers", answers, "--run", run, "--judge-model", "stub-judge",
                         "--base-url", endpoint.base_url, "--cache-dir", tmp_path / "cache", option, target], capsys)
    _refused(code, err, option)
    assert endpoint.requests == [], "the judge was called before the output path was checked"
    assert not (tmp_path / "cache").exists()
    _history_untouched()


# --- ragexam answer ----------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["dir", "under-file"])
def test_answer_out(bad, which, endpoint, capsys, tmp_path):
    _, _, _, run = write_case(tmp_path / "case")
    target = bad[0] if which == "dir" else bad[1] / "a.jsonl"
    code, _, err = _cli(["answer", "--run", run, "--model", "stub-gen", "--base-url", endpoint.base_url,
                         "--cache-dir", tmp_path / "cache", "--out", target], capsys)
    _refused(code, err, "--out")
    assert endpoint.requests == [], "answers were generated before the output path was checked"
    assert not (tmp_path / "cache").exists()
    leftovers = [p for p in tmp_path.rglob("*.tmp")]
    assert leftovers == [] and list(bad[0].iterdir()) == []


def test_good_paths_still_work(run_dir, tmp_path, capsys):
    """The checks refuse only bad paths: a new nested file and an existing file are written."""
    new = tmp_path / "new" / "deeper" / "r.html"
    code, out, err = _cli(["report", run_dir, "-o", new], capsys)
    assert code in (0, None) and new.stat().st_size > 0, err
    code, out, err = _cli(["report", run_dir, "-o", new], capsys)
    assert code in (0, None), err
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["run_id"] in new.read_text(
        encoding="utf-8")
