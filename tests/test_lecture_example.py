"""The lecture-stack notebook (docs/examples/lecture_stack/lecture_stack.ipynb) run end to end as a user runs it:
its code cells in order, in a copy of its folder with a ``.env`` made from ``.env.example`` that points LangChain
and ragexam at a loopback OpenAI-compatible stub (chat + embeddings).  Its matplotlib figures are saved and
checked (drawn, with Korean glyphs, not empty)."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

pytest.importorskip("langchain_openai", reason="the lecture example needs langchain-openai (test extra)")
pytest.importorskip("langchain_community", reason="the lecture example needs langchain-community (test extra)")
pytest.importorskip("dotenv", reason="the lecture example needs python-dotenv (test extra)")

from ragexam.testing import StubEndpoint  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "lecture_stack"
_ENV_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE")


def _cells(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_notebook_runs_against_the_stub_and_saves_its_figures(tmp_path, monkeypatch):
    from ragexam.report import plots

    work = tmp_path / "lecture_stack"
    shutil.copytree(EXAMPLE, work)
    for name in _ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGEXAM_HISTORY", str(tmp_path / "history.sqlite3"))
    monkeypatch.setenv("RAGEXAM_EXAMPLE_FIGURES", str(tmp_path / "figures"))
    monkeypatch.chdir(work)
    with StubEndpoint() as ep:
        env = (work / ".env.example").read_text(encoding="utf-8")
        env = env.replace("OPENAI_API_KEY=sk-...your-key...", "OPENAI_API_KEY=sk-test-lecture")
        env = env.replace("# OPENAI_BASE_URL=http://localhost:11434/v1", f"OPENAI_BASE_URL={ep.base_url}")
        assert ep.base_url in env and "sk-test-lecture" in env
        (work / ".env").write_text(env, encoding="utf-8")
        ns: dict = {"__name__": "__main__"}
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for i, src in enumerate(_cells(work / "lecture_stack.ipynb")):
                    try:
                        exec(compile(src, f"lecture_stack.ipynb[cell {i}]", "exec"), ns)
                    except Exception as err:  # name the cell in the failure
                        raise AssertionError(f"cell {i} failed: {err!r}\n{src}") from err
        finally:  # load_dotenv() set them in os.environ: take them out again (monkeypatch restores the originals)
            for name in _ENV_NAMES:
                os.environ.pop(name, None)
        # everything went through the stub: embeddings (FAISS), chat (12 answers, and the judge: 11 items each of
        # answer_correctness and context_precision; faithfulness and context_recall ask only about the items whose
        # claims no context quotes word for word, ragexam.metrics.judge.quoted)
        assert ep.counts["/v1/embeddings"] >= 2 and ep.counts["/v1/chat/completions"] >= 12 + 2 * 11 + 1
    assert "OPENAI_API_KEY" not in os.environ or os.environ["OPENAI_API_KEY"] != "sk-test-lecture"
    missing = [str(w.message) for w in caught if "missing from" in str(w.message)]
    assert missing == [], missing[:3]
    # the notebook's numbers are real: two pipelines graded, every judge metric judged with coverage
    result, report, pipeline = ns["result"], ns["report"], ns["pipeline"]
    assert [p.name for p in result.pipelines] == ["bm25 | paragraphs:400", pipeline]
    assert result.summary["results"][pipeline]["metrics"]["hit@5"] > 0.5
    for m in ("faithfulness", "answer_correctness", "context_recall", "context_precision"):
        s = report.judge_summary(pipeline, m)
        assert s.n_judged >= 0.8 * s.n > 0 and s.ci95 is not None, (m, s)
        assert (s.quoted is not None) == (m in ("faithfulness", "context_recall")), (m, s.quoted)
    assert {c["judge_metric"] for c in report.judge_vs_evidence()[pipeline]} == {"context_precision", "context_recall"}
    # the figures: saved, drawn, Korean text set in a Korean font
    assert plots.korean_font() is not None, "CI installs fonts-nanum; without a Korean font the glyph check is moot"
    from matplotlib.image import imread

    for name in ("k_sweep", "fbeta", "by_type", "first_rank", "attribution"):
        path = tmp_path / "figures" / f"{name}.png"
        assert path.stat().st_size > 5_000, name
        img = imread(path)
        assert float((img[..., :3] < 0.5).mean()) > 0.002, name  # ink on the page
    sweep = ns["figures"]["k_sweep"].axes[0].lines
    assert len(sweep) == 2  # one line per pipeline
