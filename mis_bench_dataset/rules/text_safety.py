"""User text made safe for each place it is shown: HTML, Markdown, CSV, the terminal and UTF-8 files.

Model names, file names and raw responses come from users and servers. Control characters
(NUL, escape sequences) and Unicode bidi overrides can hide or reorder what a reader sees
(a "Trojan Source" name), and markup characters can inject HTML or break a Markdown table.
Every writer passes such text through the function for its medium; none of them drops text
silently: controls become visible escapes (`\\x1b`, `\\u202e`).
"""

from __future__ import annotations

import html
import re

# C0 and C1 controls except tab and newline, DEL, and the bidi embedding/override/isolate marks.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c\ufeff]")
_UNSAFE_INLINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c\ufeff]")
# Characters that would start Markdown emphasis, code, a link or a table cell.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _visible(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_controls(text: str, *, inline: bool = False) -> str:
    """Control and bidi characters replaced by visible escapes; `inline` escapes newlines and tabs too."""
    return (_UNSAFE_INLINE if inline else _UNSAFE).sub(_visible, str(text))


def clean_terminal(text: str) -> str:
    """For the console: no escape sequences or bidi overrides reach the terminal; paths read under a
    non-UTF-8 locale are shown as the text their bytes spell (`unicode_text`)."""
    return visible_controls(unicode_text(text))


def clean_line(text: object) -> str:
    """For one line of the console or a log (an error, a problem): `clean_terminal`, newlines and tabs escaped too."""
    return visible_controls(unicode_text(str(text)), inline=True)


def escape_html(text: object) -> str:
    """For HTML text and attribute values."""
    return html.escape(visible_controls(str(text), inline=True), quote=True)


def escape_markdown(text: object) -> str:
    """For a Markdown cell or line: no raw HTML (`<` as an entity), emphasis, links or cell breaks; one line."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(visible_controls(str(text), inline=True), quote=False))


def escape_csv(text: object) -> str:
    """For a CSV cell opened in a spreadsheet: no formula injection, no control characters."""
    value = visible_controls(str(text), inline=True)
    return "'" + value if value.startswith(_FORMULA_START) else value


# A run of surrogate escapes (bytes a non-UTF-8 locale could not decode), or any other lone surrogate.
_SURROGATE_RUN = re.compile("[\udc80-\udcff]+|[\ud800-\udfff]")


def _repair(match: re.Match) -> str:
    run = match.group(0)
    if "\udc80" <= run[0] <= "\udcff":
        return bytes(ord(c) - 0xDC00 for c in run).decode("utf-8", errors="backslashreplace")
    return f"\\u{ord(run):04x}"


def unicode_text(text: str) -> str:
    """`text` as valid Unicode, what a file or JSON written as UTF-8 can hold.

    A path decoded under a non-UTF-8 locale (`LC_ALL=C`) holds its undecodable bytes as surrogate
    escapes (`"d\\udcc3\\udca9"` for the UTF-8 name "dé"): they become the text those bytes spell
    in UTF-8 ("dé"), or `\\xNN` escapes where they are not UTF-8; any other lone surrogate (from a
    JSON `\\ud800` escape) becomes a visible `\\ud800`. Valid text is returned as it is.
    """
    text = str(text)
    return _SURROGATE_RUN.sub(_repair, text) if _SURROGATE_RUN.search(text) else text


def slug(text: str) -> str:
    """A file-name-safe form of a model id or setting (run folders, submission names, report files)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80] or "model"
