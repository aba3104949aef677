"""``ragexam serve`` speaks Korean and English: one catalogue (``ragexam.serve.strings``) for every label, button,
message and error page; the language chosen by the page's switch, ``--lang``, the browser's ``Accept-Language``,
else the data's; ``<html lang>`` set to match.  The browser reads both languages in tests/test_serve_browser.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from test_serve_results import built, client as results_client, text  # noqa: F401 (fixtures)
from test_serve_review import client, generated, qa  # noqa: F401 (fixtures)

TEMPLATES = Path(__file__).resolve().parents[1] / "src" / "ragexam" / "serve" / "templates"
SERVE = TEMPLATES.parent
_FIELDS = re.compile(r"\{(\w+)[^}]*\}")
_HANGUL = re.compile("[\uac00-\ud7a3]")
#: texts Korean writes as English does (an abbreviation, a pattern of values only)
SAME_IN_KOREAN = {"col.id", "runs.col.id", "runs.sort.id", "outcome.status"}


def test_every_text_has_both_languages_with_the_same_values():
    from ragexam.serve.strings import STRINGS

    for key, entry in STRINGS.items():
        assert len(entry) in (2, 3) and all(x.strip() for x in entry), key
        en, ko = entry[0], entry[1]
        assert set(_FIELDS.findall(en)) == set(_FIELDS.findall(ko)), key
        if len(entry) == 3:
            assert set(_FIELDS.findall(entry[2])) <= set(_FIELDS.findall(en)), key
        assert _HANGUL.search(ko) or key in SAME_IN_KOREAN, (key, ko)  # Korean, not a copy of the English
        assert not _HANGUL.search(en.replace("이 문서에서", "")), (key, en)


def test_every_key_a_page_uses_is_in_the_catalogue():
    from ragexam.serve.i18n import CATALOGUE as STRINGS  # the server's texts and the report's (its sections, r.*)

    used = set()
    for f in list(TEMPLATES.glob("*.html")) + list(SERVE.glob("*.py")):
        src = f.read_text(encoding="utf-8")
        used |= set(re.findall(r"""\bt(?:ext)?\(\s*["']([a-z_]+\.[a-z_.]+)["']""", src))
        used |= set(re.findall(r"""["']((?:error|support|outcome|compare|run|item|review)\.[a-z_.]+)["']""", src))
    prefixes = {k.rsplit(".", 1)[0] + "." for k in STRINGS}
    missing = sorted(k for k in used if k not in STRINGS and k not in prefixes and not k.endswith((".", ".html")))
    assert not missing, missing
    for dynamic in ("status.", "kind.", "field.", "runs.sort.", "check."):  # keys built in templates
        assert any(k.startswith(dynamic) for k in STRINGS), dynamic
    from ragexam.serve.reviewing import STATUSES

    assert all(f"status.{s}" in STRINGS for s in STATUSES + ("candidate",))


def test_accept_language_and_the_order_of_choices():
    from ragexam.serve.i18n import choose, from_accept_language

    assert from_accept_language("ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7") == "ko"
    assert from_accept_language("en-GB,en;q=0.9,ko;q=0.8") == "en"
    assert from_accept_language("fr-FR, en;q=0.5, ko;q=0.6") == "ko"
    assert from_accept_language("de, fr") is None and from_accept_language(None) is None
    assert from_accept_language("ko;q=0, en") == "en" and from_accept_language("ko;q=bad") is None
    assert choose(asked="en", cookie="ko", option="ko", accept="ko", data="ko").code == "en"
    assert choose(asked="xx", cookie="en", option="ko", accept="ko", data="ko").code == "en"
    assert choose(option="en", accept="ko", data="ko").code == "en"
    assert choose(accept="en-US", data="ko").code == "en"
    assert choose(accept="de", data="en").code == "en" and choose(data="ko").code == "ko"


def _client_lang(qa, **options):
    from starlette.testclient import TestClient

    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    return TestClient(create_app(Catalog.of([qa]), ServeOptions(port=8765, **options)),
                      base_url="http://127.0.0.1:8765")


def test_the_language_follows_the_browser_the_option_the_switch_and_the_data(qa, tmp_path):
    c = _client_lang(qa)
    assert '<html lang="ko">' in c.get("/").text  # a Korean set, no Accept-Language: the data's
    en = c.get("/", headers={"accept-language": "en-US,en;q=0.9"})
    assert '<html lang="en">' in en.text and "Question sets to review" in en.text
    assert en.headers["content-language"] == "en"
    ko = c.get("/review/1", headers={"accept-language": "ko-KR,ko;q=0.9"})
    assert '<html lang="ko">' in ko.text and "검토: qa.jsonl" in ko.text and "하나씩 검토하기" in ko.text
    # the switch: kept in a cookie, the address given again without it
    r = c.get("/review/1?status=all&lang=en", headers={"accept-language": "ko"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/review/1?status=all"
    assert "ragexam_lang=en" in r.headers["set-cookie"] and "SameSite=Strict" in r.headers["set-cookie"]
    assert '<html lang="en">' in c.get("/review/1", headers={"accept-language": "ko"}).text
    c.cookies.clear()
    assert 'href="/review/1?status=all&amp;lang=en"' in c.get("/review/1?status=all").text  # the switch's link
    # --lang beats the browser
    assert '<html lang="en">' in _client_lang(qa, lang="en").get("/", headers={"accept-language": "ko"}).text
    # the data: a set whose card says English
    english = tmp_path / "en"
    shutil.copytree(qa.parent, english)
    card = english / "qa.card.json"
    d = json.loads(card.read_text(encoding="utf-8"))
    d["corpus"]["language"] = "en"
    card.write_text(json.dumps(d), encoding="utf-8")
    assert '<html lang="en">' in _client_lang(english / "qa.jsonl").get("/").text


def test_error_pages_and_refusals_speak_korean(qa):
    c = _client_lang(qa, lang="ko", token="s3cret-token-0123456789")
    r = c.get("/")
    assert r.status_code == 401 and "접근 토큰이 필요합니다" in r.text and '<html lang="ko">' in r.text
    c.headers["authorization"] = "Bearer s3cret-token-0123456789"
    r = c.get("/review/9")
    assert r.status_code == 404 and "9번 질문 세트는 없습니다" in r.text and "찾을 수 없습니다" in r.text
    r = c.post("/review/1/decide", content="&".join(["a=1"] * 2001).encode(),
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413 and "필드가 2,000개를 넘습니다" in r.text
    r = c.post("/review/1/decide", data={"key": "gen_0001", "action": "accept"})
    assert r.status_code == 403 and "CSRF" in r.text and "거부했습니다" in r.text
    assert c.delete("/review/1/decide").status_code == 405


def test_the_results_pages_speak_korean_with_the_reports_own_sections(built):
    c = results_client(built, lang="ko")
    runs = c.get("/runs")
    assert '<html lang="ko">' in runs.text and "실행과 채점" in runs.text and "대표 지표 (95% 신뢰구간)" in runs.text
    run = c.get("/run/f1")
    t = text(run)
    assert "놓친 질문" in t and "모두" in t and "다른 실행과 비교" in t and "데이터셋 it_helpdesk" in t
    assert 'lang="ko"' in run.text and "dataset <b" not in run.text
    # the report's own sections speak the page's language too (ragexam.report.strings), not marked English
    assert run.text.count('<div class="report-part">') == 3 and 'class="report-part" lang="en"' not in run.text
    assert '<section id="scores"><h2>점수</h2>' in run.text and '<h2>데이터셋 카드</h2>' in run.text
    assert "<h3>기준선과의 비교</h3>" in run.text and '<section id="settings"><h2>설정</h2>' in run.text
    compare = c.get("/compare?a=f1&b=f2")
    assert "공통 질문" in text(compare) and "B에서 놓친 질문" in text(compare)
    score = c.get("/run/f3")
    assert "실패 단계 분석" in text(score) and "판정 비율" in text(score)


def test_the_lang_option_is_checked():
    from ragexam.errors import InputError
    from ragexam.serve.security import ServeOptions

    with pytest.raises(InputError, match="expected ko or en") as err:
        ServeOptions(lang="fr")
    assert err.value.source == "--lang"


def test_every_rejection_reason_has_its_korean_meaning():
    from ragexam.questions.checks import REASONS
    from ragexam.serve.strings import REASONS_KO

    assert set(REASONS_KO) == set(REASONS)
    assert all(_HANGUL.search(v) for v in REASONS_KO.values())
