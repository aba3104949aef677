"""The run history: record, list, get, delete; ids; where the database lives; all-or-nothing records."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from ragexam.cli import main
from ragexam.errors import InputError
from ragexam.storage.history import History, default_history_path, record
from ragexam.storage.runfolder import coerce_rows
from test_report_fixtures import make_run, write_run


@pytest.fixture(scope="module")
def run():
    return make_run(n_questions=20, seed=11, n_resamples=50, n_permutations=50)


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code or 0, out.out, out.err


def test_roundtrip(tmp_path, run):
    summary, rows = run
    hist = History(tmp_path / "h.sqlite3")
    run_id = hist.record_run(summary, rows)
    assert run_id == summary["run_id"]
    got_summary, got_rows = hist.get(run_id)
    assert got_summary == json.loads(json.dumps(summary))
    assert got_rows == coerce_rows(rows)
    (entry,) = hist.list_runs()
    assert entry.run_id == run_id and entry.kind == "run" and entry.dataset == "it_helpdesk"
    assert entry.pipelines == [p["name"] for p in summary["pipelines"]]
    assert entry.headline_metric == "hit@5"
    assert entry.headline == {p: r["metrics"]["hit@5"] for p, r in summary["results"].items()}
    assert entry.ragexam_version == "0.1.0" and entry.n_rows == len(rows) and len(entry.dataset_hash) == 16
    # aggregates are plain rows too
    con = sqlite3.connect(hist.path)
    n = con.execute("SELECT count(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()[0]
    lo = con.execute("SELECT ci_low FROM results WHERE run_id = ? AND metric = 'mrr' AND pipeline = ?",
                     (run_id, summary["pipelines"][0]["name"])).fetchone()[0]
    con.close()
    assert n == sum(len(r["metrics"]) for r in summary["results"].values())
    assert math.isclose(lo, summary["results"][summary["pipelines"][0]["name"]]["ci95"]["mrr"][0])
    assert hist.integrity_check() == "ok"


def test_ids_are_never_overwritten(tmp_path, run):
    summary, rows = run
    hist = History(tmp_path / "h.sqlite3")
    a = hist.record_run(summary, rows)
    assert hist.record_run(summary, rows) == a  # the same summary again: the same record
    changed = json.loads(json.dumps(summary))
    changed["config"]["seed"] = 99
    b = hist.record_run(changed, rows)
    assert b == f"{a}.2"
    assert hist.get(b).summary["config"]["seed"] == 99 and hist.get(a).summary["config"]["seed"] == 11
    assert len(hist.list_runs()) == 2


def test_prefix_latest_and_delete(tmp_path, run):
    summary, rows = run
    hist = History(tmp_path / "h.sqlite3")
    for i in range(3):
        s = dict(summary, run_id=f"20261201T00000{i}Z-abc{i}")
        hist.record_run(s, rows)
    assert hist.resolve_id("20261201T000001") == "20261201T000001Z-abc1"
    assert hist.resolve_id("latest") == "20261201T000002Z-abc2"
    with pytest.raises(InputError, match="ambiguous"):
        hist.get("20261201")
    with pytest.raises(InputError, match="ragexam runs"):
        hist.get("nope")
    assert hist.delete("20261201T000001Z-abc1") is True
    assert hist.delete("20261201T000001Z-abc1") is False
    assert [e.run_id for e in hist.list_runs()] == ["20261201T000002Z-abc2", "20261201T000000Z-abc0"]
    con = sqlite3.connect(hist.path)
    assert con.execute("SELECT count(*) FROM questions WHERE run_id LIKE '%abc1'").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM results WHERE run_id LIKE '%abc1'").fetchone()[0] == 0
    con.close()


def test_a_failing_record_leaves_nothing(tmp_path, run):
    summary, rows = run
    hist = History(tmp_path / "h.sqlite3")
    bad = [dict(r) for r in rows]
    bad[len(bad) // 2]["first_rank"] = "seven"
    with pytest.raises(InputError, match="first_rank"):
        hist.record_run(summary, bad)
    nan = json.loads(json.dumps(summary))
    nan["results"][summary["pipelines"][0]["name"]]["metrics"]["mrr"] = float("nan")
    with pytest.raises(InputError, match="NaN"):
        hist.record_run(nan, rows)
    assert hist.list_runs() == []
    con = sqlite3.connect(hist.path)
    assert con.execute("SELECT count(*) FROM questions").fetchone()[0] == 0
    con.close()


def test_where_the_database_lives(tmp_path, monkeypatch):
    for var in ("RAGEXAM_HISTORY", "RAGEXAM_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_history_path() == tmp_path / "home" / ".local" / "share" / "ragexam" / "history.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_history_path() == tmp_path / "xdg" / "ragexam" / "history.sqlite3"
    monkeypatch.setenv("RAGEXAM_HOME", str(tmp_path / "rh"))
    assert default_history_path() == tmp_path / "rh" / "history.sqlite3"
    monkeypatch.setenv("RAGEXAM_HISTORY", str(tmp_path / "x.db"))
    assert default_history_path() == tmp_path / "x.db"
    assert History().path == tmp_path / "x.db"
    assert History(tmp_path / "y.db").path == tmp_path / "y.db"


def test_bad_paths(tmp_path, run):
    summary, rows = run
    with pytest.raises(InputError, match="folder"):
        History(tmp_path).record_run(summary, rows)
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="not a ragexam history database"):
        History(junk).list_runs()
    with pytest.raises(InputError, match="run_id"):
        History(tmp_path / "h.db").record_run(dict(summary, run_id=""), rows)


def test_record_helper_and_kind(tmp_path, run):
    summary, rows = run
    s = dict(summary, run_id="score-1", format="ragexam-score/1")
    assert record(s, rows, tmp_path / "h.db") == "score-1"
    assert History(tmp_path / "h.db").list_runs()[0].kind == "score"


def test_cli_runs_show_delete(tmp_path, run, capsys, monkeypatch):
    summary, rows = run
    folder = write_run(tmp_path / "run", summary, rows)
    monkeypatch.setenv("RAGEXAM_HISTORY", str(tmp_path / "env.db"))
    code, out, _ = _cli(["runs", "--record", str(folder)], capsys)
    assert code == 0 and summary["run_id"] in out and "hit@5" in out and "it_helpdesk" in out
    code, out, _ = _cli(["runs", "--json"], capsys)
    (entry,) = json.loads(out)
    assert entry["run_id"] == summary["run_id"] and entry["headline_metric"] == "hit@5"
    code, out, _ = _cli(["show", "latest", "--json"], capsys)
    assert json.loads(out)["run_id"] == summary["run_id"]
    code, out, _ = _cli(["show", summary["run_id"][:12]], capsys)
    assert code == 0 and "bm25" in out
    # --history wins over the environment
    code, out, _ = _cli(["runs", "--history", str(tmp_path / "other.db")], capsys)
    assert "No recorded runs" in out
    code, _, err = _cli(["runs", "--delete", "nope"], capsys)
    assert code == 2 and "nope" in err
    code, out, _ = _cli(["runs", "--delete", summary["run_id"]], capsys)
    assert code == 0 and "No recorded runs" in out
    code, _, err = _cli(["show", "nope"], capsys)
    assert code == 2 and "ragexam runs" in err
