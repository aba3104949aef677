"""What keeps ``ragexam serve`` safe by default (docs/serve.md, "Security").

* **Where it listens**: a loopback address (``127.0.0.1``, ``localhost``, ``::1``) by default.  Any other
  address needs an access token of at least :data:`MIN_TOKEN_CHARS` characters (``--token`` or
  ``$RAGEXAM_SERVE_TOKEN``); without one :func:`check_bind` refuses to start.
* **Every request carries the token** when one is set: ``Authorization: Bearer TOKEN``, or the cookie the
  server sets when a page is opened once as ``/?token=TOKEN`` (the token is then removed from the address).
* **Host header**: on a loopback address only the loopback names are answered, so a web page cannot reach
  the server through a DNS name that rebinds to 127.0.0.1.
* **CSRF**: every ``POST`` carries the server's random CSRF token (a hidden form field or the
  ``X-CSRF-Token`` header), and a browser's ``Origin`` must be the server's own; other methods that change
  state are not served.  Bodies are capped at :data:`MAX_BODY` bytes.
* **Headers**: a content security policy that allows this server's own scripts and styles only (no inline
  script, no other origin), no framing, no referrer to other sites, no caching of pages.

Which files are served is not decided here: pages name files by the number of a set the user named on the
command line, never by path (:mod:`ragexam.serve.app`).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from ragexam.errors import InputError

__all__ = ["ServeOptions", "check_bind", "is_loopback", "Guard", "MIN_TOKEN_CHARS", "MAX_BODY", "TOKEN_ENV",
           "CSRF_FIELD", "parse_form"]

#: the environment variable holding the access token
TOKEN_ENV = "RAGEXAM_SERVE_TOKEN"
MIN_TOKEN_CHARS = 16
#: largest request body accepted (bytes)
MAX_BODY = 1 << 20
CSRF_FIELD = "csrf"
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~+/=-]+")
_LOOPBACK_NAMES = ("localhost",)
_TOKEN_FIX = ("set one of at least 16 characters, e.g. --token \"$(python -c 'import secrets; "
              "print(secrets.token_urlsafe(24))')\" or the environment variable " + TOKEN_ENV)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
            (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"),
            (b"cross-origin-opener-policy", b"same-origin"), (b"cross-origin-resource-policy", b"same-origin")]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback address."""
    h = host.strip().strip("[]").lower()
    if h in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: Optional[str]) -> None:
    """Refuse (:class:`~ragexam.errors.InputError`) a non-loopback ``host`` without a token, and a short token."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InputError(f"the access token has {len(token)} characters; {_TOKEN_FIX}", source="--token",
                         field="token")
    if token is not None and not _TOKEN_CHARS.fullmatch(token):
        raise InputError("the access token may hold letters, digits and - . _ ~ + / = only (it travels in a "
                         f"cookie and an address); {_TOKEN_FIX}", source="--token", field="token")
    if not is_loopback(host) and not token:
        raise InputError(f"received --host {host}: listening on an address other computers can reach needs an "
                         f"access token, and none is set; {_TOKEN_FIX} (or leave --host at 127.0.0.1)",
                         source="--host", field="host")


@dataclass
class ServeOptions:
    """How the server runs: ``host``, ``port`` (0: any free port), the access ``token`` (``None``: none), and
    the per-process CSRF token (random)."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: Optional[str] = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def __post_init__(self) -> None:
        check_bind(self.host, self.token)
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise InputError(f"received {self.port!r}; expected a port from 0 (any free port) to 65535",
                             source="--port", field="port")

    @property
    def cookie_name(self) -> str:
        return f"ragexam_token_{self.port}"


def parse_form(body: bytes) -> Dict[str, List[str]]:
    """An ``application/x-www-form-urlencoded`` body as ``{name: [values]}`` (blank values kept)."""
    return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=2000)


Send = Callable[[Dict[str, Any]], Awaitable[None]]


class Guard:
    """ASGI middleware enforcing the host, token and CSRF rules of the module docstring on ``app``.

    ``refuse(status, title, reason)`` renders the page a refused request gets (bytes of HTML)."""

    def __init__(self, app: Any, options: ServeOptions, refuse: Callable[[int, str, str], bytes]) -> None:
        self.app = app
        self.options = options
        self.refuse = refuse

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        send = self._with_headers(send)
        problem = self._host_problem(headers)
        if problem is not None:
            return await self._page(send, 421, "Wrong host name", problem)
        if self.options.token is not None:
            redirect = self._token_in_query(scope)
            if redirect is not None:
                return await send_redirect(send, redirect[0], redirect[1])
            if not self._has_token(headers):
                return await self._page(send, 401, "Access token needed", "this server needs its access token: open "
                                        "the address with ?token=YOUR_TOKEN once (the browser then keeps it), or send "
                                        "the header 'Authorization: Bearer YOUR_TOKEN'")
        method = scope["method"]
        if method in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        if method != "POST":
            return await self._page(send, 405, "Method not allowed", f"{method} is not served; pages change state "
                                                                     "with POST only")
        return await self._post(scope, receive, send, headers)

    async def _post(self, scope: Dict[str, Any], receive: Any, send: Send, headers: Dict[str, str]) -> None:
        origin = headers.get("origin")
        if headers.get("sec-fetch-site") == "cross-site" or (
                origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower()):
            return await self._page(send, 403, "Refused", f"a request from another site ({origin or 'cross-site'}) "
                                                          "may not change anything here")
        length = headers.get("content-length") or "0"
        if not length.isdigit():
            return await self._page(send, 400, "Bad request", f"received Content-Length {length!r}; expected a number")
        if int(length) > MAX_BODY:
            return await self._page(send, 413, "Too large", f"the request body is over {MAX_BODY} bytes")
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_BODY:
                return await self._page(send, 413, "Too large", f"the request body is over {MAX_BODY} bytes")
        sent = headers.get("x-csrf-token") or (parse_form(body).get(CSRF_FIELD) or [""])[0]
        if not hmac.compare_digest(sent.encode(), self.options.csrf.encode()):
            return await self._page(send, 403, "Refused: no valid CSRF token", "a change needs the CSRF token of the "
                                    "page it was made on (reload the page and try again)")
        replayed = False

        async def replay() -> Dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    def _host_problem(self, headers: Dict[str, str]) -> Optional[str]:
        if not is_loopback(self.options.host):
            return None
        host = headers.get("host", "")
        name = urlsplit("//" + host).hostname or ""
        if is_loopback(name):
            return None
        return (f"this server answers to its loopback address only, and the request named the host {host!r}; "
                f"open http://127.0.0.1:{self.options.port}/")

    def _has_token(self, headers: Dict[str, str]) -> bool:
        want = (self.options.token or "").encode()
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip().encode(), want):
            return True
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.options.cookie_name and hmac.compare_digest(value.encode(), want):
                return True
        return False

    def _token_in_query(self, scope: Dict[str, Any]) -> Optional[Tuple[str, List[Tuple[bytes, bytes]]]]:
        """``(location, extra headers)`` when a GET names the right token in its query: the cookie is set and
        the address is given again without the token."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        sent = (query.pop("token", None) or [None])[0]
        if scope["method"] != "GET" or sent is None or not hmac.compare_digest(
                sent.encode(), (self.options.token or "").encode()):
            return None
        location = "/" + quote(scope.get("path", "/")).lstrip("/")  # "//host" would leave this server
        location += "?" + urlencode(query, doseq=True) if query else ""
        cookie = f"{self.options.cookie_name}={self.options.token}; HttpOnly; SameSite=Strict; Path=/"
        return location, [(b"set-cookie", cookie.encode("latin-1"))]

    def _with_headers(self, send: Send) -> Send:
        async def wrapped(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _HEADERS if k not in names]
                if b"cache-control" not in names:
                    extra.append((b"cache-control", b"no-store"))
                message = dict(message, headers=list(message.get("headers", [])) + extra)
            await send(message)
        return wrapped

    async def _page(self, send: Send, status: int, title: str, reason: str) -> None:
        body = self.refuse(status, title, reason)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


async def send_redirect(send: Send, location: str, headers: List[Tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")] + headers})
    await send({"type": "http.response.body", "body": b""})
