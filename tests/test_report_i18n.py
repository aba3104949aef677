"""The report's own sections speak Korean and English from one catalogue (``ragexam.report.strings`` through
``ragexam.report.i18n``, the mechanism ``ragexam serve`` uses for its own texts too).

* English, the default, is byte for byte the report as it was before the sections had a catalogue: the SHA-256 of
  a fixture run's report below was recorded with that code (the same render, before and after);
* ``render_report(..., lang="ko")`` / ``ragexam report --lang ko`` and a Korean page of ``ragexam serve`` show the
  sections in Korean: no English word outside data, names and the words ragexam computes (marked ``lang="en"``);
* every text has both languages with the same values, and the server's and the report's keys never collide.
The browser reads the Korean sections on serve's pages in tests/test_serve_browser.py.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

import pytest

from test_cli_pipelines import cli
from test_report_fixtures import make_run, write_run

REPORT = Path(__file__).resolve().parents[1] / "src" / "ragexam" / "report"
#: sha256 of ``render_report`` of :func:`_run` (footer time scrubbed), recorded with the code before the catalogue;
#: re-recorded when the scores' note said how small sets get Wilson's interval or none, and the judge's trust
#: verdicts got their CSS (issue 41.4, 37.4): the only lines that changed
#: re-recorded when the verdicts (the cells' titles) took the tables' form of an interval (fmt.signed_ci)
ENGLISH_SHA256 = "89b1de83f92fed5fad2ec2c179dc1714ffc446f724c692813a30185d91b32e59"
_FIELDS = re.compile(r"\{(\w+)[^}]*\}")
_HANGUL = re.compile("[\uac00-\ud7a3]")
#: texts Korean writes as English does
SAME_IN_KOREAN = {"r.ci.signed"}  # an interval "-0.061 ~ +0.152": Korean writes it with a tilde, no word
#: names and data of the fixture run a Korean report may show in Latin letters
NAMES = {"ragexam", "Holm", "JSON", "LLM", "dense", "bm", "hybrid", "paragraphs", "lexical", "meaning", "hit", "mrr",
         "map", "ndcg", "rprec", "evidence", "doc"}


def _run():
    return make_run(n_questions=40, seed=5, run_id="20261130T144005Z-aaaaaa")


def _render(lang="en"):
    from ragexam.report.html import render_report

    summary, rows = _run()
    return re.sub(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC", "on TIME", render_report(summary, rows, lang=lang))


def english_left(page: str, allowed=NAMES):
    """Latin words of ``page`` outside scripts, charts, code, data (``class="data"``, evidence, signatures) and what
    is marked ``lang="en"``."""
    text = re.sub(r"<(svg|script|style|code|pre|select|title)\b.*?</\1>", " ", page, flags=re.S)
    for _ in range(4):  # nested marked elements, innermost first
        text = re.sub(r'<([a-z0-9]+)\b[^>]*(lang="en"|class="[^"]*\b(evidence|data|sig)\b[^"]*")[^>]*>'
                      r"((?!<\1\b).)*?</\1>", " ", text, flags=re.S)
    words = re.findall(r"(?<![\w.:/>#@-])[A-Za-z][A-Za-z'-]{2,}(?![\w.#:@>/-])",
                       html.unescape(re.sub(r"<[^>]+>", " ", text)))
    return sorted({w for w in words if w not in allowed})


def test_the_english_report_is_byte_for_byte_the_one_before_the_catalogue():
    assert hashlib.sha256(_render().encode("utf-8")).hexdigest() == ENGLISH_SHA256


def test_a_korean_report_speaks_korean_outside_data_and_names():
    page = _render("ko")
    assert "<h2>점수</h2>" in page and "<h2>그래프</h2>" in page and "<h2>데이터셋 카드</h2>" in page
    assert "<h3>기준선과의 비교</h3>" in page and "<h1>ragexam 보고서</h1>" in page
    assert english_left(page) == []
    assert english_left(_render("en"))  # the check finds English where there is some
    # the expand button's script speaks the page's language; the English script is untouched
    assert "'숨기기'" in page and "'hide'" not in page and "'hide'" in _render("en")


def test_the_korean_dataset_card_and_intervals_are_korean():
    """Rows the card shows under their field names, the chunk sizes line and the intervals of differences were
    English on a Korean page (inside the data-marked table, so :func:`english_left` did not see them)."""
    from ragexam.report.html import render_report
    from ragexam.storage.summary import ChunkingReport, ChunkSizes, ChunkWindow

    summary, rows = _run()
    summary["dataset"].update(scored_types={"meaning": 21, "lexical": 16}, n_evidence=37,
                              n_unmatched_evidence={"paragraphs:400": 1})
    window = ChunkWindow(embedder="e5", window=510, action="windowed", n_over=2, max_tokens=600)
    summary["chunking"] = ChunkingReport(sizes={"paragraphs:400": ChunkSizes(n_chunks=131, mean_chars=169.0,
                                                                            max_chars=232, windows=[window])},
                                         budgets=["2000c"], budget_rule="given").to_dict()
    page, english = (render_report(summary, rows, lang=lang) for lang in ("ko", "en"))
    assert "<td>2000c (-k로 지정): " in page and "given with -k" in english and "given with -k" not in page
    assert "2개가 e5의 창 510 토큰을 넘음" in page
    heads = re.findall(r"<tr><th>([^<]*)</th>", page)
    for key in ("scored_types", "n_evidence", "n_unmatched_evidence"):
        assert key not in heads and f"<th>{key}</th>" in english
    assert "<th>근거 문자열 수</th>" in page and "<th>채점한 질문의 유형</th>" in page
    assert "paragraphs:400: 청크 131개, 평균 169자 / 최대 232자" in page
    assert not re.search(r"\d chunks, mean \d", page) and re.search(r"\d chunks, mean \d", english)
    cell = r">[+-]?\d\.\d{{3}} {} [+-]?\d\.\d{{3}}<"  # an interval cell (the verdicts are ragexam's words)
    assert re.search(cell.format("~"), page) and not re.search(cell.format("to"), page)
    assert re.search(cell.format("to"), english)


def test_every_report_text_has_both_languages_with_the_same_values():
    from ragexam.report.strings import STRINGS

    for key, entry in STRINGS.items():
        assert key.startswith("r.") and len(entry) in (2, 3) and all(x.strip() for x in entry), key
        en, ko = entry[0], entry[1]
        assert set(_FIELDS.findall(en)) == set(_FIELDS.findall(ko)), key
        if len(entry) == 3:
            assert set(_FIELDS.findall(entry[2])) <= set(_FIELDS.findall(en)), key
        assert _HANGUL.search(ko) or key in SAME_IN_KOREAN, (key, ko)
        assert not _HANGUL.search(en), (key, en)


def test_the_report_and_the_server_share_one_catalogue_without_collisions():
    from ragexam.report.strings import STRINGS as REPORT
    from ragexam.serve.i18n import CATALOGUE
    from ragexam.serve.strings import STRINGS as SERVE

    assert not set(REPORT) & set(SERVE)
    assert CATALOGUE == {**REPORT, **SERVE}
    assert not any(k.startswith("r.") for k in SERVE)


def test_every_key_the_report_uses_is_in_its_catalogue():
    from ragexam.report.sections import _CARD_ROWS, _CHUNKING_ROWS, _JUDGE_COLS, _P_FROM, _USAGE_WORDS
    from ragexam.report.strings import STRINGS

    used = set()
    for f in REPORT.glob("*.py"):
        used |= set(re.findall(r"""["'](r\.[a-z0-9_]+(?:\.[a-z0-9_]+)*)["']""", f.read_text(encoding="utf-8")))
    used |= {f"r.ds.{k}" for k in ("corpus", "qa", "n_documents", "n_questions", "n_answerable", "n_out_of_corpus",
                                   "n_scored", "corpus_sha256", "qa_sha256", *_CARD_ROWS)}
    used |= {f"r.facts.rule.{m}" for m in ("evidence", "doc")}
    for table in (_CHUNKING_ROWS, _JUDGE_COLS, _P_FROM, _USAGE_WORDS):
        used |= set(table.values())
    assert sorted(k for k in used if k not in STRINGS) == []
    assert sorted(k for k in STRINGS if k not in used) == []  # no text left behind


def test_the_catalogue_says_the_relevance_rules_as_the_grading_does():
    from ragexam.data.relevance import RULES
    from ragexam.report.strings import STRINGS
    from ragexam.serve.strings import STRINGS as SERVE

    for mode, rule in RULES.items():
        words = rule.format(unit="chunk")
        assert STRINGS[f"r.facts.rule.{mode}"][0] == f" ({words})"
        assert words in SERVE[f"runs.relevance_hint.{mode}"][0] and f"({words})" in SERVE[f"run.facts.relevance.{mode}"][0]


def test_the_language_is_checked_and_the_cli_writes_a_korean_report(tmp_path, capsys):
    from ragexam.errors import InputError
    from ragexam.report.html import render_report

    summary, rows = _run()
    with pytest.raises(InputError, match=r"received 'fr'; expected en or ko \(lang='ko' for Korean\)"):
        render_report(summary, rows, lang="fr")
    folder = write_run(tmp_path / "run", summary, rows)
    code, _, err = cli(["report", folder, "--out", tmp_path / "r.html", "--lang", "fr"], capsys)
    assert code == 2 and "--lang: received 'fr'; expected en or ko (--lang ko for Korean)" in err
    assert not (tmp_path / "r.html").exists()
    code, out, _ = cli(["report", folder, "--out", tmp_path / "ko.html", "--lang", "ko"], capsys)
    page = (tmp_path / "ko.html").read_text(encoding="utf-8")
    assert code == 0 and "<h2>점수</h2>" in page and english_left(page) == []
    code, _, _ = cli(["report", folder, "--out", tmp_path / "en.html"], capsys)
    assert "<h2>Scores</h2>" in (tmp_path / "en.html").read_text(encoding="utf-8")  # English by default
