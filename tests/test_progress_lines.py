"""No silent waits (issue 40): long commands print progress lines when stderr is not a terminal, and Ctrl-C or
SIGTERM prints one line saying what is kept, leaving a cache the next run resumes from."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from ragexam.errors import InputError
from ragexam.exec import progress as P
from ragexam.testing.stub import StubEndpoint


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_line_names_command_stage_counts_rate_and_eta():
    clock = Clock()
    lines = P.ProgressLines("run", interval=10, stream=io.StringIO(), clock=clock, lang="en")
    lines.enter_stage("embed")
    t = lines.begin("embedding passages (e5)", 2422)
    clock.now += 2
    assert lines.line() == "ragexam run · embed · embedding passages (e5) 0/2,422 (0%) · waiting for the first · 2 s"
    lines.update(t, 1200)
    clock.now += 28
    # 1,200 in 30 s: 40/s, 1,222 left -> 31 s; 30 s since the command started
    assert lines.line() == "ragexam run · embed · embedding passages (e5) 1,200/2,422 (50%) · 40.0/s · ETA 31 s · 30 s"
    lines.end(t)
    lines.exit_stage("embed")
    clock.now += 3600
    assert lines.line() == "ragexam run · 1 h 00 min"


def test_korean_words_and_durations():
    clock = Clock()
    lines = P.ProgressLines("judge-check", stream=io.StringIO(), clock=clock, lang="ko")
    cb_task = lines.begin("judging", 40)
    lines.update(cb_task, 12)
    clock.now += 65
    assert lines.line() == "ragexam judge-check · judging 12/40 (30%) · 초당 0.18 · 남은 시간 2분 32초 · 1분 05초"
    assert P.duration(7322, "en") == "2 h 02 min" and P.duration(59.6, "en") == "1 min 00 s"


def test_interval_from_the_environment(monkeypatch):
    monkeypatch.setenv(P.ENV, "0.25")
    assert P.interval_from_env() == 0.25
    monkeypatch.delenv(P.ENV)
    assert P.interval_from_env() == 10.0
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(P.ENV, bad)
        with pytest.raises(InputError, match="RAGEXAM_PROGRESS_INTERVAL=10"):
            P.interval_from_env()
    monkeypatch.setenv(P.ENV, "0")  # 0: no lines at all
    with P.progress_lines("run", force=True) as lines:
        assert lines is None and P.active() is None


def _wait_for(out: io.StringIO, text: str, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while text not in out.getvalue():
        assert time.monotonic() < end, out.getvalue()
        time.sleep(0.01)


def test_reporter_prints_at_most_one_line_per_interval_and_keeps_printing_while_a_step_lasts():
    out = io.StringIO()
    t0 = time.monotonic()
    with P.progress_lines("run", interval=0.05, force=True, stream=out) as lines:
        assert P.active() is lines
        with P.task("counting", 10) as t:
            t.advance(3)
            _wait_for(out, "counting 3/10 (30%)")
            while out.getvalue().count("counting 3/10") < 3:  # one long step: the lines go on showing life
                time.sleep(0.01)
        cb = P.callback("judging")
        cb(1, 4)
        _wait_for(out, "judging 1/4 (25%)")
        cb(4, 4)
    spent = time.monotonic() - t0
    assert P.active() is None
    assert 2 <= len(out.getvalue().splitlines()) <= spent / 0.05 + 1  # at most one line per interval
    with P.task("nobody listens", 5) as t:  # without a reporter: a no-op
        t.advance(5)
    assert P.callback("judging") is None


# -- the command line: a run whose embedding service is slow --------------------------------------------------


class SlowEmbeddings(StubEndpoint):
    """The loopback stub, answering each embeddings request after ``delay`` seconds and counting the texts."""

    def __init__(self, delay: float) -> None:
        super().__init__(dimensions=16)
        self.delay = delay
        self.texts = 0
        self.inflight = 0

    def handle(self, path, body, headers):
        if path.endswith("/embeddings"):
            with self.lock:
                self.inflight += 1
            try:
                time.sleep(self.delay)
                with self.lock:
                    self.texts += len(body.get("input") or [])
            finally:
                with self.lock:
                    self.inflight -= 1
        return super().handle(path, body, headers)

    def settled(self, timeout: float = 30.0) -> int:
        """The texts received once no request is being answered (a request the interrupted process sent is still
        being answered after it exited; it counts for that process, not for the next)."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while quiet < 3 and time.monotonic() < deadline:
            time.sleep(self.delay)
            with self.lock:
                quiet = quiet + 1 if self.inflight == 0 else 0
        return self.texts


def _run_cmd(stub, out_dir):
    return [sys.executable, "-c", "from ragexam.cli import main; main()", "run", "--corpus", "it_helpdesk", "--qa",
            "it_helpdesk", "-r", "dense:openai:stub-embed", "-c", "chars:40:0", "--no-history", "--out", str(out_dir)]


def _env(stub, tmp_path, interval="0.2"):
    return {**os.environ, "OPENAI_BASE_URL": stub.base_url, "RAGEXAM_CACHE_DIR": str(tmp_path / "cache"), "RAGEXAM_PROGRESS_INTERVAL": interval,
            "LANG": "C.UTF-8", "LC_ALL": "", "RAGEXAM_LANG": "", "OPENAI_API_KEY": "sk-test"}


def _embeddings_kept(tmp_path) -> int:
    with sqlite3.connect(tmp_path / "cache" / "retrieval-cache.sqlite3") as conn:
        return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]


def test_run_with_stderr_piped_prints_progress_lines(tmp_path):
    with SlowEmbeddings(0.1) as stub:
        proc = subprocess.run(_run_cmd(stub, tmp_path / "out"), env=_env(stub, tmp_path), capture_output=True,
                              text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [x for x in proc.stderr.splitlines() if x.startswith("ragexam run · ")]
    counted = [x for x in lines if re.search(r"· embed · embedding passages \(openai\) [\d,]+/[\d,]+ "
                                             r"\(\d+%\) · .*/s · ETA \d", x)]
    assert counted, proc.stderr[-3000:]
    assert (tmp_path / "out" / "summary.json").is_file()


def test_sigint_prints_one_line_and_a_rerun_resumes_from_the_cache(tmp_path):
    with SlowEmbeddings(0.15) as stub:
        proc = subprocess.Popen(_run_cmd(stub, tmp_path / "out"), env=_env(stub, tmp_path), stderr=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True)
        seen: list = []
        started = threading.Event()

        def read():
            for line in proc.stderr:
                seen.append(line.rstrip("\n"))
                if re.search(r"embedding passages .* [1-9][\d,]*/", line):
                    started.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert started.wait(300), "\n".join(seen[-20:])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        reader.join(10)
        first_texts = stub.settled()
        said = [x for x in seen if x.startswith("interrupted")]
        assert len(said) == 1 and "Traceback" not in "\n".join(seen), "\n".join(seen[-20:])
        assert said[0].startswith("interrupted by SIGINT (Ctrl-C) in stage embed after ")
        assert "the retrieval cache" in said[0] and "running the same command again resumes" in said[0]
        assert not (tmp_path / "out").exists()
        kept = _embeddings_kept(tmp_path)
        assert 0 < kept <= first_texts
        rerun = subprocess.run(_run_cmd(stub, tmp_path / "out"), env=_env(stub, tmp_path, "0"), capture_output=True,
                               text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert rerun.stderr.count("ragexam run · ") == 0  # interval 0: no lines
        summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
        total = _embeddings_kept(tmp_path)
        # the rerun sent only what the cache did not hold: every text was embedded once over the two runs
        assert stub.texts - first_texts == total - kept and summary["results"]


def test_llm_commands_feed_the_same_lines(capsys):
    """score, answer, judge-check, generate (and the coming locate-evidence, traces) take their callback from
    cli_options.progress: with stderr not a terminal it feeds the command's lines."""
    from ragexam.cli_options import progress
    from ragexam.cli_progress import LONG_COMMANDS, command_of

    assert {"run", "grade", "generate", "score", "answer", "judge-check", "locate-evidence", "traces"} <= set(
        LONG_COMMANDS)
    assert command_of(["judge-check", "--qa", "x"]) == "judge-check" and command_of(["--version"]) is None
    out = io.StringIO()
    with P.progress_lines("score", interval=3600, force=True, stream=out) as lines:
        cb = progress("judging", tty=False)
        cb(0, 0)  # nothing to judge: nothing on the line
        assert "judging" not in lines.line()
        cb(5, 20)
        assert lines.line().startswith("ragexam score · judging 5/20 (25%) · ")
    assert progress("judging") is None  # no command running: nothing to feed


def test_the_interrupted_line_says_what_is_kept(monkeypatch, tmp_path):
    from ragexam.cli_progress import interrupted_line

    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("RAGEXAM_LANG", "en")
    line = interrupted_line("judge-check", signal.SIGTERM, None)
    assert line.startswith("interrupted by SIGTERM: every reply received is kept in the LLM cache (")
    assert str(tmp_path / "llm-cache.sqlite3") in line and "\n" not in line
    run = interrupted_line("grade", signal.SIGINT, "chunk")
    assert run.startswith("interrupted by SIGINT (Ctrl-C) in stage chunk:") and "retrieval cache" in run
    # locate-evidence without a model keeps no reply and no located question: it must not promise to resume
    locate = interrupted_line("locate-evidence", signal.SIGTERM, "embed")
    assert "every reply received is kept" not in locate and "written whole at the end" in locate
    assert "does the rest of the work from the start" in locate
    monkeypatch.setenv("RAGEXAM_LANG", "ko")
    ko = interrupted_line("run", signal.SIGINT, "embed")
    assert ko.startswith("중단됨 (SIGINT (Ctrl-C)) (embed 단계)") and "다시 실행하면" in ko
    assert "처음부터 다시" in interrupted_line("traces", signal.SIGINT, None)


def test_items_found_in_a_cache_are_left_out_of_the_rate_and_the_time_left():
    """565 of 3,182 embeddings came from the cache at once: the line must not read 233/s and "ETA 11 s" when the
    work itself goes at 3/s (reviewer's report: the true time left was 15 min)."""
    from ragexam.exec.progress import ProgressLines, _Counted

    now = [0.0]
    p = ProgressLines("run", interval=0, clock=lambda: now[0])
    t = p.begin("embedding 3,182 passages (e5)", 3182)
    counted = _Counted(p, t)
    counted.skip(565)
    now[0] = 5.0
    assert "565/3,182 (18%)" in p.line() and "waiting for the first" in p.line()
    counted.advance(15)
    line = p.line()
    assert "580/3,182 (18%)" in line and "3.0/s" in line and "ETA 14 min 27 s" in line


def test_counted_work_inside_counted_work_shows_the_whole_and_its_time_left():
    from ragexam.exec.progress import ProgressLines

    now = [0.0]
    p = ProgressLines("run", interval=0, clock=lambda: now[0])
    outer = p.begin("chunking paragraphs:400: documents", 1000)
    p.update(outer, 200)
    now[0] = 10.0
    inner = p.begin("splitting sentences (kiwi)", 50)
    p.update(inner, 20)
    line = p.line()
    assert "chunking paragraphs:400: documents 200/1,000 (20%) · 20.0/s · ETA 40 s · splitting sentences (kiwi) " \
           "20/50 (40%) · 10 s" in line
