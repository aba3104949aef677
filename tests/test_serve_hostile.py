"""``ragexam serve`` under hostile requests and files (issue 39): every case is a page with the reason -- never a
500 with a traceback -- and the server keeps serving.

Forms with too many fields, a 65,000-character search, a summary nested 50,000 deep, the history replaced by
garbage while the server runs, two servers on ``--port 0`` with one browser, ``--open`` with a token, a 950 KB
evidence edit, two runs with different pipelines compared.
"""

from __future__ import annotations

import shutil

import pytest

from test_serve_results import built, client as results_client, text  # noqa: F401 (fixtures)
from test_serve_review import client, generated, post, qa, version  # noqa: F401 (fixtures)

TOKEN = "s3cret-token-0123456789"


def deep_summary(folder, depth=50_000):
    """A run folder whose ``summary.json`` nests ``depth`` arrays (the issue's repro)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text('{"format": "ragexam-run/3", "results": {"x": ' + "[" * depth + "]" * depth
                                         + "}}", encoding="utf-8")
    return folder


def test_a_form_with_too_many_fields_is_a_page_not_a_traceback(qa):
    c = client(qa, raise_server_exceptions=False)
    body = "&".join(["a=1"] * 2001)
    r = c.post("/review/1/decide", content=body.encode(),
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413, r.text[:400]
    assert "2,000" in text(r) and "Traceback" not in r.text
    # with the CSRF token too: still refused before any decision is made
    r = c.post("/review/1/decide", content=(f"csrf={c.csrf}&" + body).encode(),
               headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413
    # a body that is not UTF-8 form data is a 400 page, not a crash
    r = c.post("/review/1/decide", content=b"csrf=" + c.csrf.encode() + b"&key=\xff\xfe&action=accept",
               headers={"content-type": "application/x-www-form-urlencoded"}, follow_redirects=False)
    assert r.status_code in (400, 404, 422) and "Traceback" not in r.text
    assert c.get("/review/1").status_code == 200  # and the server goes on


def test_an_unexpected_failure_in_the_request_checks_is_a_page(qa, monkeypatch):
    from ragexam.serve import security

    def boom(*a, **k):
        raise RuntimeError("the checks broke")

    monkeypatch.setattr(security.Guard, "_host_problem", boom)
    r = client(qa, raise_server_exceptions=False).get("/")
    assert r.status_code == 500 and "the checks broke" in r.text and "Traceback" not in r.text


def test_a_very_long_search_finds_nothing_instead_of_failing(built):
    c = results_client(built)
    r = c.get("/runs", params={"q": "x" * 65_000})
    assert r.status_code == 200 and "No record matches" in text(r)
    r = c.get("/runs", params={"q": "%_" * 15_000})
    assert r.status_code == 200
    r = c.get("/run/h:" + "2" * 65_000)
    assert r.status_code == 404 and "Traceback" not in r.text


def test_the_history_search_matches_text_literally(tmp_path, built):
    from ragexam.storage.history import History

    h = History(built.history)
    every = h.page_runs(limit=100).total
    assert h.page_runs(text="%", limit=100).total == 0 and h.page_runs(text="T%Z", limit=100).total == 0
    assert h.page_runs(text="it_help", limit=100).total == 2 and h.page_runs(text="itXhelp", limit=100).total == 0
    assert h.page_runs(text="20261130T144005Z", limit=100).total == 1
    assert h.page_runs(text="20261130t144005z", limit=100).total == 1  # ASCII case does not matter
    assert h.page_runs(text="", limit=100).total == every
    assert h.resolve_id("20261130t144005") == "20261130T144005Z-aaaaaa"  # a prefix, any ASCII case


def test_a_deeply_nested_summary_is_a_page_naming_the_file(built, tmp_path):
    folder = deep_summary(tmp_path / "deep")
    c = results_client(built, built.run_a, folder)
    r = c.get("/run/f2")
    t = text(r)
    assert r.status_code == 422 and str(folder / "summary.json") in t and "nested deeper than" in t, t[:600]
    listing = c.get("/runs")
    assert listing.status_code == 200 and "nested deeper than" in text(listing)
    r = c.get("/compare", params={"a": "f1", "b": "f2"})
    assert r.status_code == 422 and "nested deeper than" in text(r)


def test_the_history_replaced_by_garbage_while_serving_is_a_page(built, tmp_path):
    history = tmp_path / "history.sqlite3"
    shutil.copy(built.history, history)
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions
    from starlette.testclient import TestClient

    c = TestClient(create_app(Catalog.of([], None, [built.run_a], history), ServeOptions(port=8765, lang="en")),
                   base_url="http://127.0.0.1:8765", raise_server_exceptions=False)
    assert c.get("/runs").status_code == 200
    rid = "20261130T144005Z-aaaaaa"
    assert c.get(f"/run/h:{rid}").status_code == 200
    for suffix in ("-wal", "-shm"):
        (tmp_path / ("history.sqlite3" + suffix)).unlink(missing_ok=True)
    history.write_bytes(b"this is not a database " * 400)
    for path in ("/runs", f"/run/h:{rid}2", f"/compare?a=f1&b=h:{rid}2"):
        r = c.get(path)
        assert r.status_code == 422, (path, r.status_code, r.text[:300])
        t = text(r)
        assert str(history) in t and "not a ragexam history database" in t and "Traceback" not in r.text, t[:400]
    home = c.get("/")
    assert home.status_code == 200 and "not a ragexam history database" in text(home)
    assert c.get("/run/f1").status_code == 200  # the named folder is still served


def test_two_servers_on_port_0_have_their_own_cookie():
    from ragexam.serve.security import ServeOptions
    from ragexam.serve.server import bind

    a, b = ServeOptions(port=0, token=TOKEN), ServeOptions(port=0, token=TOKEN)
    sa, sb = bind(a), bind(b)
    try:
        assert a.cookie_name != b.cookie_name
        assert a.cookie_name == f"ragexam_token_{sa.getsockname()[1]}"
        assert b.cookie_name == f"ragexam_token_{sb.getsockname()[1]}"
    finally:
        sa.close()
        sb.close()


def test_the_command_line_of_the_browser_never_holds_the_token(qa, monkeypatch):
    """``serve --open`` opens a one-time sign-in address: the token is in no process list or browser history, and
    the address signs in once only."""
    import httpx

    from ragexam.serve import server
    from ragexam.serve.app import Catalog, create_app
    from ragexam.serve.security import ServeOptions

    options = ServeOptions(port=0, token=TOKEN, lang="en")
    running = server.start(create_app(Catalog.of([qa]), options), options)
    try:
        address = server.browser_address(running.url, options)
        assert TOKEN not in address and "?login=" in address
        with httpx.Client(follow_redirects=False, timeout=30) as browser:
            r = browser.get(address)
            assert r.status_code == 303 and "login" not in r.headers["location"]
            assert browser.get(running.url).status_code == 200  # signed in by the cookie
        with httpx.Client(follow_redirects=False, timeout=30) as other:
            r = other.get(address)
            assert r.status_code == 401  # used once: worth nothing to whoever reads it later
            assert "Access token needed" in r.text
        assert server.browser_address(running.url, ServeOptions(port=0)) == running.url  # no token: no code
    finally:
        running.stop()
    opened = []
    import webbrowser

    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    import inspect

    assert "browser_address(url, options)" in inspect.getsource(server.serve)  # what --open opens


def test_a_huge_evidence_edit_is_refused_with_the_reason(qa):
    c = client(qa)
    page = c.get("/review/1/item?key=gen_0001")
    ver = version(page)
    huge = ("abcdefgh" * 120_000)[:950_000]  # 950 KB: the form's cap is 1 MiB
    r = post(c, "gen_0001", "save", ver, question="VPN은 어떻게 신청하나요?", ground_truth="신청서를 냅니다.",
             evidence=huge)
    assert r.status_code == 422
    t = text(r)
    assert "evidence_too_long" in t and "Traceback" not in r.text
    assert "950,000 characters" in t and "looked for in evidence of at most" in t  # no search for its closest piece


def test_compare_with_different_pipelines_points_to_the_selectors(built, tmp_path):
    from test_report_fixtures import make_run, write_run

    other = write_run(tmp_path / "other", *make_run(n_questions=40, seed=5, pipelines=("tfidf | para", "dense | p"),
                                                    run_id="20261130T144005Z-cccccc"))
    c = results_client(built, built.run_a, other)
    r = c.get("/compare", params={"a": "f1", "b": "f2"})
    t = text(r)
    assert r.status_code == 422 and "--pipeline" not in t, t[:800]
    assert "A's pipeline" in t and "B's pipeline" in t


def test_the_run_page_speaks_plain_words(built):
    """No "Randomization test methods: approximate" nor "usage: texts_embedded 2394" (the report's sections, which
    the run page shows)."""
    from ragexam.report import sections
    from ragexam.storage.summary import Comparison, RerankStage

    t = text(results_client(built).get("/run/f1"))
    assert "Randomization test" not in t and "approximate" not in t
    assert "How the p-values were computed:" in t and "from random sign flips of the per-question differences" in t
    b = RerankStage(first_stage="bm25", reranker="dense", top=20, usage={"texts_embedded": 2394})
    items = " ".join(sections._rerank_items(b))
    assert "usage:" not in items and "texts_embedded" not in items and "2,394 texts embedded" in items
    assert sections.usage_words({"calls": 3, "cached": 1200, "cost_usd": 0.0123, "model": "m"}) == (
        "3 calls made now, 1,200 answered from the cache, cost $0.0123, model m")
    note = sections.p_value_note([Comparison(method="exact"), Comparison(method="approximate")] * 2, 10000)
    assert note == ("How the p-values were computed: 2 comparisons exactly (every pattern of signs of the "
                    "per-question differences counted); 2 comparisons from random sign flips of the per-question "
                    "differences (10,000 of them).")
    assert sections.p_value_note([], None) == ""
