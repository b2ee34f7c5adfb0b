"""HTTP(S) URLs given on the command line (`run --base-url`, `fetch --base-url`), checked once, at the boundary.

`urllib.parse.urlsplit` accepts nearly anything and fails late: an IPv6 address without its closing bracket
raises `ValueError` only when split, a port out of range or not a number only when `.port` is read (deep in a
request, as an internal error). `http_url` reads every part once and says what is wrong, naming the URL
(its password hidden), so each malformed form is a usage error before anything runs. The query string is
kept (`HttpUrl.query`: Azure OpenAI's `?api-version=...` must reach every request).
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from mis_bench_dataset.toolkit.errors import UsageError

SCHEMES = ("http", "https")
# What a URL may not hold anywhere: whitespace and control characters (a pasted line break, a tab).
_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f]")
_USERINFO = re.compile(r"(//)[^/@]*@")


@dataclass(frozen=True)
class HttpUrl:
    """An http(s) URL's parts, each read and checked (`http_url`)."""

    url: str  # as given, without a trailing slash
    scheme: str
    host: str  # without IPv6 brackets
    port: int | None
    path: str  # without a trailing slash
    query: str  # without the "?"

    @property
    def display(self) -> str:
        """What errors and logs show: scheme, host, port and path; never a password, never the query's values."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        query = "?" + "&".join(f"{name}=..." for name in _query_names(self.query)) if self.query else ""
        return f"{self.scheme}://{host}{port}{self.path}{query}"


def _query_names(query: str) -> list[str]:
    return [name for name, _ in urllib.parse.parse_qsl(query, keep_blank_values=True)] or ["..."]


def hidden_password(url: str) -> str:
    """`url` with any `user:password@` replaced by `...@` (for a URL too malformed to split)."""
    return _USERINFO.sub(r"\1...@", url)


def http_url(text: str, *, where: str, example: str = "http://127.0.0.1:8000/v1") -> HttpUrl:
    """`text` read as an http(s) URL; a `UsageError` naming the URL and what is wrong with it otherwise."""

    def refuse(problem: str) -> UsageError:
        return UsageError(
            f"{hidden_password(text)!r} is not a usable URL: {problem}",
            where=where,
            hint=f"give a URL such as {example}",
        )

    url = text.strip().rstrip("/")
    if not url:
        raise refuse("it is empty")
    if _FORBIDDEN.search(url):
        raise refuse("it holds whitespace or a control character")
    if "://" not in url:
        raise refuse("no scheme (it must start with http:// or https://)")
    host_port = re.split(r"[/?#]", url.partition("://")[2], maxsplit=1)[0].rpartition("@")[2]
    if host_port.startswith("["):
        address, closed, port_text = host_port[1:].partition("]")
        if not closed:
            raise refuse("an IPv6 address without its closing bracket")
        if port_text and not port_text.startswith(":"):
            raise refuse(f"{port_text!r} after the IPv6 address, where only :PORT may stand")
        port_text = port_text[1:]
    elif host_port.count(":") > 1 or "]" in host_port:
        raise refuse("an IPv6 address must be written in brackets, e.g. http://[::1]:8000/v1")
    else:
        port_text = host_port.partition(":")[2]
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        raise refuse(f"the port {port_text!r} is not a number")
    if port_text and not 1 <= int(port_text) <= 65535:
        raise refuse(f"the port {port_text} is out of range (1-65535)")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as err:  # what the checks above leave to urllib (e.g. an invalid IPv6 address)
        raise refuse(str(err)) from None
    if parts.scheme.lower() not in SCHEMES:
        raise refuse(f"the scheme {parts.scheme!r} is not http or https")
    if not parts.hostname:
        raise refuse("no host")
    if parts.fragment:
        raise refuse("a fragment (#...) is never sent to a server")
    return HttpUrl(url, parts.scheme.lower(), parts.hostname, port, parts.path.rstrip("/"), parts.query)


def http_url_list(text: str | list[str] | tuple[str, ...], *, where: str) -> list[HttpUrl]:
    """The URLs of an option given several times or as a comma list, each checked, each once, in the order given."""
    parts = [text] if isinstance(text, str) else list(text)
    given = [url.strip() for part in parts for url in part.split(",") if url.strip()]
    if not given:
        raise UsageError("no URL given", where=where, hint="give a URL such as http://127.0.0.1:8000/v1")
    urls = {url.url: url for url in (http_url(item, where=where) for item in given)}
    return list(urls.values())
