"""``ragexam serve`` is safe by default: loopback only unless a token is set, the token on every request, only
the named files, CSRF on every change, no stack trace on any page (docs/serve.md, "Security")."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest

from test_serve_review import client, generated, post, qa, sheet_rows, version  # noqa: F401 (fixtures)

TOKEN = "s3cret-token-0123456789"


def test_only_the_named_files_are_served(qa):
    c = client(qa)
    assert c.get("/review/1").status_code == 200
    for path in ("/review/2", "/review/0/item?key=gen_0001", "/review/..%2F..%2Fetc%2Fpasswd",
                 "/static/../../pyproject.toml", "/static/%2e%2e%2f%2e%2e%2fpyproject.toml", "/static/app.py",
                 "/review/1/item?key=../../etc/passwd", "/etc/passwd", f"/{qa}", "/review/1/qa.jsonl"):
        r = c.get(path)
        assert r.status_code == 404, (path, r.status_code)
        assert "root:" not in r.text and "[build-system]" not in r.text and "Traceback" not in r.text
    assert "only the files named on its command line" in c.get("/review/2").text
    css = c.get("/static/serve.css")
    assert css.status_code == 200 and "Noto Sans CJK KR" in css.text and "%FONTS%" not in css.text


def test_a_change_without_the_csrf_token_is_refused(qa):
    c = client(qa)
    ver = version(c.get("/review/1/item?key=gen_0001"))
    before = qa.with_name("qa.review.csv").read_bytes()
    form = {"key": "gen_0001", "action": "accept", "version": ver}
    for data, headers in ((form, {}), (dict(form, csrf="forged"), {}),
                          (dict(form, csrf=c.csrf), {"origin": "http://evil.example"}),
                          (dict(form, csrf=c.csrf), {"sec-fetch-site": "cross-site"})):
        r = c.post("/review/1/decide", data=data, headers=headers, follow_redirects=False)
        assert r.status_code == 403, (data, headers)
        assert "Refused" in r.text
    for method in ("put", "delete", "patch"):
        assert getattr(c, method)("/review/1/decide").status_code == 405
    assert qa.with_name("qa.review.csv").read_bytes() == before
    assert post(c, "gen_0001", "accept", ver).status_code == 303  # the page's own token works
    assert sheet_rows(qa)["gen_0001"]["status"] == "accepted"
    huge = c.post("/review/1/decide", content=b"csrf=" + c.csrf.encode() + b"&x=" + b"a" * (2 << 20),
                  headers={"content-type": "application/x-www-form-urlencoded"})
    assert huge.status_code == 413


def test_another_host_name_is_refused_on_loopback(qa):
    c = client(qa)
    r = c.get("/", headers={"host": "rebind.evil.example:8765"})
    assert r.status_code == 421 and "loopback address only" in r.text
    assert c.get("/", headers={"host": "localhost:8765"}).status_code == 200
    assert c.get("/", headers={"host": "[::1]:8765"}).status_code == 200


def test_the_token_is_needed_on_every_request(qa):
    c = client(qa, token=TOKEN)
    for path in ("/", "/review/1", "/static/serve.css"):
        r = c.get(path)
        assert r.status_code == 401 and "Access token needed" in r.text
    assert c.get("/?token=wrong-token-0123456789").status_code == 401
    r = c.get("/review/1?token=" + TOKEN + "&status=all", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/review/1?status=all"  # the token leaves the address
    assert "HttpOnly" in r.headers["set-cookie"] and "SameSite=Strict" in r.headers["set-cookie"]
    c.cookies.set("ragexam_token_8765", TOKEN)
    assert c.get("/review/1").status_code == 200
    c.cookies.clear()
    assert c.get("/", headers={"authorization": "Bearer " + TOKEN}).status_code == 200
    from ragexam.serve.security import Guard, ServeOptions

    guard = Guard(None, ServeOptions(port=8765, token=TOKEN), lambda *a: b"")  # no redirect to another site
    where, _ = guard._token_in_query({"method": "GET", "path": "//evil.example/"}, {"token": [TOKEN]})
    assert where == "/evil.example/"


def test_pages_carry_the_security_headers(qa):
    r = client(qa).get("/review/1/item?key=gen_0001")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "no-store" and r.headers["referrer-policy"] == "same-origin"
    assert "<script>" not in r.text and re.search(r"<script src=\"/static/serve.js\"", r.text)


def test_an_unexpected_failure_is_a_page_without_a_stack_trace(qa, monkeypatch):
    from ragexam.serve.reviewing import ReviewSession

    def boom(self):
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(ReviewSession, "items", boom)
    r = client(qa, raise_server_exceptions=False).get("/review/1")
    assert r.status_code == 500 and "the disk went away" in r.text and "Traceback" not in r.text
    assert "File \"" not in r.text


def test_binding_rules():
    from ragexam.errors import InputError
    from ragexam.serve.security import ServeOptions, check_bind, is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.5"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.0.10", "example.org"))
    for host in ("0.0.0.0", "::", "10.0.0.7"):
        with pytest.raises(InputError, match="needs an access token") as err:
            check_bind(host, None)
        assert err.value.source == "--host"
        check_bind(host, TOKEN)
    with pytest.raises(InputError, match="has 5 characters") as err:
        ServeOptions(token="short")
    assert err.value.source == "--token"
    with pytest.raises(InputError, match="letters, digits"):
        ServeOptions(token="a token with spaces;0123")
    with pytest.raises(InputError, match="from 0"):
        ServeOptions(port=70000)


def _cli(*args, env=None, timeout=60):
    return subprocess.Popen([sys.executable, "-m", "ragexam.cli", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def test_host_0000_without_a_token_does_not_start():
    p = _cli("--host", "0.0.0.0", "--port", "0", env={"RAGEXAM_SERVE_TOKEN": ""})
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "--host" in err and "needs an access token" in err and "ragexam serve:" not in out
    p = _cli("--host", "0.0.0.0", "--port", "0", "--token", "abc")
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "--token" in err and "at least 16 characters" in err


def test_the_command_serves_the_named_set_and_a_busy_port_is_an_error(qa):
    import httpx

    p = _cli("--review", str(qa), "--port", "0")
    try:
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = p.stdout.readline()
            m = re.match(r"ragexam serve: (http://127\.0\.0\.1:\d+/)", line)
            url = m.group(1) if m else url
            assert line or p.poll() is None, p.stderr.read()
        assert url is not None
        home = httpx.get(url, timeout=30)
        assert home.status_code == 200 and "qa.jsonl" in home.text
        assert httpx.get(url + "review/1", timeout=60).status_code == 200
        port = int(url.rsplit(":", 1)[1].strip("/"))
        busy = _cli("--port", str(port))
        _, err = busy.communicate(timeout=60)
        assert busy.returncode == 2 and "--port" in err and "cannot listen" in err
    finally:
        p.terminate()
        p.wait(20)
    with socket.socket() as s:  # the port is free again
        s.bind(("127.0.0.1", port))


def test_every_page_and_asset_ships_in_the_wheel():
    """The templates and static files match pyproject's package-data globs (they are files of the package, not
    fetched from anywhere)."""
    import fnmatch
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    globs = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["*"]
    assets = [p for d in ("templates", "static") for p in (root / "src/ragexam/serve" / d).iterdir()]
    assert len(assets) >= 8
    assert all(any(fnmatch.fnmatch(p.name, g) for g in globs) for p in assets), assets
    pages = "".join(p.read_text(encoding="utf-8") for p in assets)
    assert "http://" not in pages.replace("http://127.0.0.1", "") and "https://" not in pages  # no CDN
