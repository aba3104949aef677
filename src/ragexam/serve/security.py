"""What keeps ``ragexam serve`` safe by default (docs/serve.md, "Security").

* **Where it listens**: a loopback address (``127.0.0.1``, ``localhost``, ``::1``) by default.  Any other
  address needs an access token of at least :data:`MIN_TOKEN_CHARS` characters (``--token`` or
  ``$RAGEXAM_SERVE_TOKEN``); without one :func:`check_bind` refuses to start.
* **Every request carries the token** when one is set: ``Authorization: Bearer TOKEN``, or the cookie the
  server sets when a page is opened once as ``/?token=TOKEN`` (the token is then removed from the address) or
  with a one-time sign-in code (``/?login=CODE``, what ``serve --open`` gives the browser: the token itself is on
  no command line).  The cookie is named after the port the server listens on, so two servers never share it.
* **Host header**: on a loopback address only the loopback names are answered, so a web page cannot reach
  the server through a DNS name that rebinds to 127.0.0.1.
* **CSRF**: every ``POST`` carries the server's random CSRF token (a hidden form field or the
  ``X-CSRF-Token`` header), and a browser's ``Origin`` must be the server's own; other methods that change
  state are not served.  Bodies are capped at :data:`MAX_BODY` bytes and :data:`MAX_FIELDS` fields; a body
  over either is a 413 page, and anything that goes wrong in these checks a page too, never a stack trace.
* **Headers**: a content security policy that allows this server's own scripts and styles only (no inline
  script, no other origin), no framing, no referrer to other sites, no caching of pages.

Which files are served is not decided here: pages name files by the number of a set the user named on the
command line, never by path (:mod:`ragexam.serve.app`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from ragexam.errors import InputError
from ragexam.serve.i18n import LANG_COOKIE, LANGS, choose, current, use

__all__ = ["ServeOptions", "check_bind", "is_loopback", "Guard", "MIN_TOKEN_CHARS", "MAX_BODY", "MAX_FIELDS",
           "TOKEN_ENV", "CSRF_FIELD", "FORM_SCOPE_KEY", "parse_form", "FormError"]

#: the environment variable holding the access token
TOKEN_ENV = "RAGEXAM_SERVE_TOKEN"
MIN_TOKEN_CHARS = 16
#: largest request body accepted (bytes)
MAX_BODY = 1 << 20
#: most fields a form may have
MAX_FIELDS = 2000
#: seconds a one-time sign-in code (``?login=``) stays valid
SIGN_IN_SECONDS = 120
CSRF_FIELD = "csrf"
#: where :class:`Guard` leaves the parsed form of a POST for the page (``request.scope[FORM_SCOPE_KEY]``)
FORM_SCOPE_KEY = "ragexam.form"
log = logging.getLogger("ragexam.serve")
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
    #: the language of the pages (``ko`` or ``en``; ``None``: the browser's, else the data's)
    lang: Optional[str] = None
    #: the port the socket is bound to (set by :func:`ragexam.serve.server.bind`; ``None`` before)
    bound_port: Optional[int] = field(default=None, compare=False)
    _codes: Dict[str, float] = field(default_factory=dict, repr=False, compare=False)
    _codes_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_bind(self.host, self.token)
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            raise InputError(f"received {self.port!r}; expected a port from 0 (any free port) to 65535",
                             source="--port", field="port")
        if self.lang is not None and self.lang not in ("ko", "en"):
            raise InputError(f"received {self.lang!r}; expected ko or en", source="--lang", field="lang")

    @property
    def listening_port(self) -> int:
        """The port the server listens on (the bound one when known: ``--port 0`` picks one)."""
        return self.bound_port if self.bound_port is not None else self.port

    @property
    def cookie_name(self) -> str:
        """The access cookie's name: per listening port, so two servers (two ``--port 0``) keep their own."""
        return f"ragexam_token_{self.listening_port}"

    def sign_in_code(self) -> str:
        """A new one-time code that signs a browser in (``/?login=CODE``) within :data:`SIGN_IN_SECONDS`."""
        code = secrets.token_urlsafe(24)
        with self._codes_lock:
            self._codes[code] = time.monotonic() + SIGN_IN_SECONDS
        return code

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is a valid sign-in code (it is then used up)."""
        now = time.monotonic()
        with self._codes_lock:
            for c in [c for c, until in self._codes.items() if until < now]:
                del self._codes[c]
            match = next((c for c in self._codes if hmac.compare_digest(c.encode(), code.encode())), None)
            if match is None:
                return False
            del self._codes[match]
            return True


class FormError(Exception):
    """A request body that is not a form this server takes: ``status`` (413, 400) and the reason ``key`` of the
    message catalogue (:mod:`ragexam.serve.strings`) with its values."""

    def __init__(self, status: int, key: str, **values: Any) -> None:
        super().__init__(key)
        self.status = status
        self.key = key
        self.values = values


def parse_form(body: bytes) -> Dict[str, List[str]]:
    """An ``application/x-www-form-urlencoded`` body as ``{name: [values]}`` (blank values kept); a
    :class:`FormError` for more than :data:`MAX_FIELDS` fields."""
    try:
        return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except ValueError:  # the standard library's own count (max_num_fields)
        raise FormError(413, "error.too_many_fields", limit=MAX_FIELDS) from None


Send = Callable[[Dict[str, Any]], Awaitable[None]]


class Guard:
    """ASGI middleware enforcing the host, token and CSRF rules of the module docstring on ``app``, and choosing
    each request's language (:mod:`ragexam.serve.i18n`) before anything is rendered.

    ``refuse(status, title, reason)`` renders the page a refused request gets (bytes of HTML);
    ``data_language()`` is the data's language (the last choice of :func:`~ragexam.serve.i18n.choose`).  A failure
    of these checks themselves is a 500 page, never a stack trace (the trace goes to the server's log)."""

    def __init__(self, app: Any, options: ServeOptions, refuse: Callable[[int, str, str], bytes],
                 data_language: Callable[[], str] = lambda: "ko") -> None:
        self.app = app
        self.options = options
        self.refuse = refuse
        self.data_language = data_language

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False
        secured = self._with_headers(send)

        async def tracked(message: Dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await secured(message)

        try:
            await self._checked(scope, receive, tracked)
        except Exception as exc:  # noqa: BLE001 -- a page, whatever went wrong
            if started:  # the application answered already (its own error page): the server logs the rest
                raise
            log.exception("ragexam serve: checking %s %s failed", scope.get("method"), scope.get("path"))
            t = current().t
            await self._page(tracked, 500, t("error.internal"), t("error.guard_failed",
                                                                   what=f"{type(exc).__name__}: {exc}"))

    async def _checked(self, scope: Dict[str, Any], receive: Any, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        self._choose_language(scope, headers, query)
        t = current().t
        problem = self._host_problem(headers)
        if problem is not None:
            return await self._page(send, 421, t("error.wrong_host"), problem)
        if self.options.token is not None:
            redirect = self._token_in_query(scope, query)
            if redirect is not None:
                return await send_redirect(send, redirect[0], redirect[1])
            if not self._has_token(headers):
                return await self._page(send, 401, t("error.token"), t("error.token_reason"))
        method = scope["method"]
        if method in ("GET", "HEAD"):
            switched = self._language_in_query(scope, query)
            if switched is not None:
                return await send_redirect(send, switched[0], switched[1])
            return await self.app(scope, receive, send)
        if method != "POST":
            return await self._page(send, 405, t("error.method"), t("error.method_reason", method=method[:20]))
        return await self._post(scope, receive, send, headers)

    def _choose_language(self, scope: Dict[str, Any], headers: Dict[str, str], query: Dict[str, List[str]]) -> None:
        cookie = next((v for n, v in _cookies(headers) if n == LANG_COOKIE), None)
        asked = (query.get("lang") or [None])[0]
        lang = choose(asked=asked, cookie=cookie, option=self.options.lang, accept=headers.get("accept-language"),
                      data=self.data_language())
        qs = scope.get("query_string", b"").decode("latin-1")
        use(lang, scope.get("path", "/") + (f"?{qs}" if qs else ""))

    async def _post(self, scope: Dict[str, Any], receive: Any, send: Send, headers: Dict[str, str]) -> None:
        t = current().t
        origin = headers.get("origin")
        if headers.get("sec-fetch-site") == "cross-site" or (
                origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower()):
            return await self._page(send, 403, t("error.refused"), t("error.cross_site",
                                                                     origin=(origin or "cross-site")[:200]))
        length = headers.get("content-length") or "0"
        if not length.isdigit():
            return await self._page(send, 400, t("error.bad_request"), t("error.bad_length", length=length[:40]))
        if int(length) > MAX_BODY:
            return await self._page(send, 413, t("error.too_large"), t("error.body_too_large", limit=MAX_BODY))
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_BODY:
                return await self._page(send, 413, t("error.too_large"), t("error.body_too_large", limit=MAX_BODY))
        try:
            form = parse_form(body)
        except FormError as err:
            return await self._page(send, err.status, t("error.too_large") if err.status == 413 else
                                    t("error.bad_request"), t(err.key, **err.values))
        sent = headers.get("x-csrf-token") or (form.get(CSRF_FIELD) or [""])[0]
        if not hmac.compare_digest(sent.encode(), self.options.csrf.encode()):
            return await self._page(send, 403, t("error.csrf"), t("error.csrf_reason"))
        scope[FORM_SCOPE_KEY] = form
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
        return current().t("error.wrong_host_reason", host=host[:200], port=self.options.listening_port)

    def _has_token(self, headers: Dict[str, str]) -> bool:
        want = (self.options.token or "").encode()
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and hmac.compare_digest(auth[7:].strip().encode(), want):
            return True
        return any(name == self.options.cookie_name and hmac.compare_digest(value.encode(), want)
                   for name, value in _cookies(headers))

    def _token_in_query(self, scope: Dict[str, Any], query: Dict[str, List[str]]
                        ) -> Optional[Tuple[str, List[Tuple[bytes, bytes]]]]:
        """``(location, extra headers)`` when a GET names the right token (or a one-time sign-in code) in its
        query: the cookie is set and the address is given again without it."""
        query = dict(query)
        sent = (query.pop("token", None) or [None])[0]
        code = (query.pop("login", None) or [None])[0]
        if scope["method"] != "GET":
            return None
        if sent is not None and hmac.compare_digest(sent.encode(), (self.options.token or "").encode()):
            pass
        elif code is None or not self.options.redeem(code):
            return None
        cookie = f"{self.options.cookie_name}={self.options.token}; HttpOnly; SameSite=Strict; Path=/"
        return _same_page(scope, query), [(b"set-cookie", cookie.encode("latin-1"))]

    def _language_in_query(self, scope: Dict[str, Any], query: Dict[str, List[str]]
                           ) -> Optional[Tuple[str, List[Tuple[bytes, bytes]]]]:
        """The language switch (``?lang=ko``): the choice is kept in a cookie and the page given again without
        it."""
        asked = (query.get("lang") or [None])[0]
        if asked not in LANGS:
            return None
        rest = {k: v for k, v in query.items() if k != "lang"}
        cookie = f"{LANG_COOKIE}={asked}; SameSite=Strict; Path=/; Max-Age=31536000"
        return _same_page(scope, rest), [(b"set-cookie", cookie.encode("latin-1"))]

    def _with_headers(self, send: Send) -> Send:
        async def wrapped(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _HEADERS if k not in names]
                if b"cache-control" not in names:
                    extra.append((b"cache-control", b"no-store"))
                if b"content-language" not in names:
                    extra.append((b"content-language", current().code.encode()))
                message = dict(message, headers=list(message.get("headers", [])) + extra)
            await send(message)
        return wrapped

    async def _page(self, send: Send, status: int, title: str, reason: str) -> None:
        body = self.refuse(status, title, reason)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _cookies(headers: Dict[str, str]) -> List[Tuple[str, str]]:
    out = []
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        out.append((name, value))
    return out


def _same_page(scope: Dict[str, Any], query: Dict[str, List[str]]) -> str:
    """The request's own path with ``query`` (a local address: ``//host`` would leave this server)."""
    location = "/" + quote(scope.get("path", "/")).lstrip("/")
    return location + ("?" + urlencode(query, doseq=True) if query else "")


async def send_redirect(send: Send, location: str, headers: List[Tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")] + headers})
    await send({"type": "http.response.body", "body": b""})
