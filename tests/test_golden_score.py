"""Golden outputs of ``ragexam score``: on the bundled it_helpdesk answers, with and without the bundled stub judge
(``ragexam.testing.stub.StubEndpoint``), every byte ``score`` prints and writes -- the console at 120 columns,
``score.json``, ``per_answer.csv``, ``judgments.jsonl``, the HTML report with the answers, and ``show`` of the
folder -- compared with files recorded before the score stages and the typed summary (issue 35), so a refactor
cannot move a byte.

Only what differs between two runs of the same settings is replaced before comparing: the temporary folder and the
package's, the stub's address (and the cache keys it enters), the creation times and run ids, the package version.
The large files (``judgments.jsonl``, ``per_answer.csv`` of the judged score, the report) are compared by their
SHA-256 (``sha256.json``); the rest as text.
``RAGEXAM_GOLDEN_UPDATE=1 pytest tests/test_golden_score.py`` rewrites the files (review the diff: a changed byte
is a changed output).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from test_judge_score_roundtrip import RUBRIC

from ragexam.cli import main

GOLDEN = Path(__file__).parent / "data" / "golden" / "score"
UPDATE = os.environ.get("RAGEXAM_GOLDEN_UPDATE") == "1"
P1, P2 = "bm25 | paragraphs:400", "bm25:whitespace | paragraphs:400"


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as ei:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return ei.value.code, out.out, out.err


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """A run folder of two pipelines, the bundled answers given to both (the second's partly replaced by an
    abstention, one missing), a rubric file, and the stub judge."""
    from ragexam.analysis.answers.files import load_answers
    from ragexam.testing.stub import StubEndpoint

    folder = tmp_path_factory.mktemp("golden-score")
    import ragexam

    ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", "bm25:whitespace"], ["paragraphs:400"], progress=False,
                n_resamples=200, n_permutations=200, cache_dir=folder / "cache").save(folder / "run")
    rows = []
    for i, r in enumerate(load_answers("it_helpdesk")):
        rows.append({"query_id": r.query_id, "pipeline": P1, "answer": r.answer})
        if i != 5:
            rows.append({"query_id": r.query_id, "pipeline": P2, "answer": r.answer if i % 3 else "모르겠습니다."})
    (folder / "two.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in rows),
                                      encoding="utf-8")
    (folder / "polite.yaml").write_text(RUBRIC.lstrip("\n"), encoding="utf-8")
    with StubEndpoint() as stub:
        yield {"folder": folder, "url": stub.base_url}


def _scrub(text: str, case) -> str:
    import ragexam

    text = text.replace(case["url"], "http://STUB").replace(str(case["folder"]), "TMP")
    text = text.replace(str(Path(ragexam.__file__).parent), "PKG")
    for pattern, fixed in ((r'"key": "[0-9a-f]{64}"', '"key": "K"'), (r'"checked": "[^"]*"', '"checked": "T"'),
                           (r'"ragexam_version": "[^"]*"', '"ragexam_version": "V"'),
                           (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "TIME"), (r"\d{8}T\d{6}Z-[0-9a-f]{6}", "ID"),
                           (r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "TIME"),
                           (r"version:ragexam-[^|\"\s<]+", "version:ragexam-V"), (r"127\.0\.0\.1:\d+", "STUB")):
        text = re.sub(pattern, fixed, text)
    return text


def _compare(name: str, text: str, *, digest: bool = False) -> None:
    if digest:
        import hashlib

        sums_path = GOLDEN / "sha256.json"
        sums = json.loads(sums_path.read_text(encoding="utf-8")) if sums_path.exists() else {}
        got = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if UPDATE:
            sums_path.parent.mkdir(parents=True, exist_ok=True)
            sums_path.write_text(json.dumps(dict(sums, **{name: got}), indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
            return
        assert sums.get(name) == got, f"{name} differs from the recorded output (SHA-256 in {sums_path})"
        return
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden file {path}; run with RAGEXAM_GOLDEN_UPDATE=1 once"
    want = path.read_text(encoding="utf-8")
    if text != want:
        lines = [(i, a, b) for i, (a, b) in enumerate(zip(want.splitlines(), text.splitlines()), 1) if a != b]
        first = lines[0] if lines else (None, f"{len(want)} chars", f"{len(text)} chars")
        pytest.fail(f"{name} differs from {path} (first at line {first[0]}):\n- {first[1]}\n+ {first[2]}")


def _files(prefix: str, folder: Path, case, *, digest: bool = False) -> None:
    for f in sorted(folder.iterdir()):
        name = f"{prefix}/{f.name}"
        _compare(name, _scrub(f.read_text(encoding="utf-8"), case), digest=digest and f.name != "score.json")


def test_text_metrics_and_phrases_score(case, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    out = case["folder"] / "text"
    code, text, err = _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--run",
                            case["folder"] / "run", "--correct-if", "chrf>=0.5", "--out", out, "--no-history",
                            "--list", "10"], capsys)
    assert code in (0, None), err
    _compare("text/console.txt", _scrub(text, case))
    _files("text/folder", out, case)
    code, text, err = _cli(["score", "--qa", "it_helpdesk", "--answers", "it_helpdesk", "--json", "--no-history",
                            "--bleu-tokenize", "char"], capsys)
    _compare("text/no_run.json", _scrub(text, case))


def test_judged_score_of_two_pipelines(case, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(case["folder"] / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out, report = case["folder"] / "judged", case["folder"] / "judged.html"
    code, text, err = _cli(["score", "--qa", "it_helpdesk", "--answers", case["folder"] / "two.jsonl", "--run",
                            case["folder"] / "run", "--judge-model", "stub-judge", "--base-url", case["url"],
                            "--repeat", "2", "--rubric", case["folder"] / "polite.yaml", "--out", out, "--report",
                            report, "--no-history", "--list", "10"], capsys)
    assert code in (0, None, 1), err
    _compare("judged/console.txt", _scrub(text, case))
    _files("judged/folder", out, case, digest=True)
    _compare("judged/report.html", _scrub(report.read_text(encoding="utf-8"), case), digest=True)
    code, text, err = _cli(["show", out], capsys)
    assert code in (0, None), err
    _compare("judged/show.txt", _scrub(text, case))
