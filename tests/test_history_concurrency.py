"""Two real processes write to one history database at once; one is killed (SIGKILL) in the
middle of its transaction.  Nothing is lost or corrupted: the database passes integrity_check,
every record either writer completed is readable in full, and the killed record left no trace."""

from __future__ import annotations

import signal
import dataclasses
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragexam.storage.history import History

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

WRITER = textwrap.dedent("""
    import sys, time, copy
    sys.path.insert(0, sys.argv[1])
    from test_report_fixtures import make_run
    from ragexam.storage.history import History

    db, name, n_records, hang_at = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    summary, rows = make_run(n_questions=30, seed=7, n_resamples=50, n_permutations=50)
    hist = History(db)

    def hanging(rows):
        for i, row in enumerate(rows):
            if i == len(rows) // 2:
                print("hanging", flush=True)
                time.sleep(600)
            yield row

    for i in range(n_records):
        s = copy.deepcopy(summary)
        s["run_id"] = f"{name}-{i:03d}"
        if i == hang_at:
            hist.record_run(s, hanging(rows))
        else:
            print("done", hist.record_run(s, rows), flush=True)
            time.sleep(0.01)
    print("finished", flush=True)
""")


def _start(script, db, name, n, hang_at):
    return subprocess.Popen([sys.executable, str(script), str(Path(__file__).parent), str(db), name, str(n),
                             str(hang_at)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_writers_and_a_kill_mid_transaction(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    db = tmp_path / "history.sqlite3"
    History(db).list_runs()  # nothing yet; does not create the file
    victim = _start(script, db, "victim", 6, hang_at=2)
    survivor = _start(script, db, "survivor", 12, hang_at=-1)
    done = {"victim": [], "survivor": []}
    try:
        # wait until the victim is inside its third transaction, holding the write lock
        deadline = time.monotonic() + 180
        for line in victim.stdout:
            if line.startswith("done "):
                done["victim"].append(line.split()[1])
            if line.strip() == "hanging":
                break
            assert time.monotonic() < deadline, "the victim never reached its transaction"
        else:
            pytest.fail(f"the victim exited early: {victim.stderr.read()}")
        time.sleep(0.5)  # let the survivor run into the held lock
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        out, err = survivor.communicate(timeout=300)
    finally:
        for p in (victim, survivor):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert victim.returncode == -signal.SIGKILL
    assert survivor.returncode == 0, err
    done["survivor"] = [ln.split()[1] for ln in out.splitlines() if ln.startswith("done ")]
    assert out.splitlines()[-1] == "finished"
    assert done["victim"] == ["victim-000", "victim-001"]
    assert len(done["survivor"]) == 12

    hist = History(db)
    assert hist.integrity_check() == "ok"
    ids = {e.run_id for e in hist.list_runs()}
    assert ids == set(done["victim"]) | set(done["survivor"])
    assert "victim-002" not in ids
    for run_id in ids:
        summary, rows = hist.get(run_id)
        assert summary["run_id"] == run_id and len(rows) == 90
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT count(*) FROM questions WHERE run_id = 'victim-002'").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM results WHERE run_id = 'victim-002'").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM questions WHERE run_id NOT IN (SELECT id FROM runs)").fetchone()[0] == 0
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()
    # and the database keeps working for new writers
    summary, rows = hist.get("victim-000")
    summary = dataclasses.replace(summary, run_id="after-kill")
    assert hist.record_run(summary, rows) == "after-kill"
