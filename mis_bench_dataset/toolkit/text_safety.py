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
import unicodedata

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
    """For HTML text and attribute values (valid Unicode: a lone surrogate becomes a visible escape)."""
    return html.escape(visible_controls(unicode_text(str(text)), inline=True), quote=True)


def escape_markdown(text: object) -> str:
    """For a Markdown cell or line: no raw HTML (`<` as an entity), emphasis, links or cell breaks; one line."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(visible_controls(str(text), inline=True), quote=False))


def escape_csv(text: object) -> str:
    """For a CSV cell opened in a spreadsheet: no formula injection, no control characters."""
    value = visible_controls(unicode_text(str(text)), inline=True)
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


def clip(text: object, limit: int = 300) -> str:
    """`text` cut to `limit` characters (an ellipsis and the cut length mark a cut): a submitted value is
    never repeated at any length in a message or on a page."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters cut]"


def safe_text(text: object, limit: int | None = None) -> str:
    """Submitted text made valid Unicode (`unicode_text`) and, with `limit`, clipped: what JSON, CSV and a
    page written as UTF-8 can always hold."""
    text = unicode_text(str(text))
    return text if limit is None else clip(text, limit)


# ----------------------------------------------------------------------------- names (identity)

# Look-alikes folded to one Latin letter before names are compared (the common Cyrillic and Greek
# homoglyphs of Unicode's confusables.txt, and the ASCII pairs I/l/1/| and O/0). NFKC has already
# folded full-width and compatibility forms. A small table on purpose: no installed library offers one.
_CONFUSABLES = str.maketrans(
    {
        **dict.fromkeys("Il1|\u0399\u0406\u04c0\u0131\u01c0", "l"),  # I, l, 1, |, Greek Iota, Cyrillic I, palochka
        **dict.fromkeys("O0\u039f\u03bf\u041e\u043e", "o"),
        **dict.fromkeys("\u0391\u03b1\u0410\u0430", "a"),
        **dict.fromkeys("\u0392\u03b2\u0412\u0432", "b"),
        **dict.fromkeys("\u0421\u0441\u03f2", "c"),
        **dict.fromkeys("\u0395\u03b5\u0415\u0435", "e"),
        **dict.fromkeys("\u0397\u041d\u043d", "h"),
        **dict.fromkeys("\u0456\u03b9", "i"),
        **dict.fromkeys("\u0408\u0458\u03f3", "j"),
        **dict.fromkeys("\u039a\u03ba\u041a\u043a", "k"),
        **dict.fromkeys("\u039c\u041c\u043c", "m"),
        **dict.fromkeys("\u039d\u03bd", "n"),
        **dict.fromkeys("\u03a1\u03c1\u0420\u0440", "p"),
        **dict.fromkeys("\u0405\u0455", "s"),
        **dict.fromkeys("\u03a4\u03c4\u0422\u0442", "t"),
        **dict.fromkeys("\u03c5\u028b", "u"),
        **dict.fromkeys("\u03a7\u03c7\u0425\u0445", "x"),
        **dict.fromkeys("\u03a5\u0423\u0443\u04af", "y"),
        **dict.fromkeys("\u0396", "z"),
        "\u0501": "d",
        "\u051b": "q",
        "\u051d": "w",
    }
)
# Categories no name may hold: controls, format characters (zero-width space U+200B, word joiner
# U+2060, bidi marks, soft hyphen), separators other than the plain space, unassigned and private use.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
_INVISIBLE_LETTERS = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}  # Hangul fillers, braille blank


def normal_name(text: str) -> str:
    """A name as the board shows it: NFKC (full-width and compatibility forms folded), outer spaces stripped."""
    return unicodedata.normalize("NFKC", unicode_text(str(text))).strip()


def invisible_characters(text: str) -> list[str]:
    """The characters of `text` no name may hold, as `U+200B` codes (empty when the name is clean)."""
    found = []
    for char in unicode_text(str(text)):
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES or (category == "Zs" and char != " ") or char in _INVISIBLE_LETTERS:
            found.append(f"U+{ord(char):04X}")
    return list(dict.fromkeys(found))


def name_key(text: str) -> str:
    """The form two names are compared in: NFKC, look-alikes folded (before case, so a capital I meets an l),
    case folded, runs of spaces, dashes and underscores as one dash. Equal keys are one identity."""
    folded = normal_name(text).translate(_CONFUSABLES).casefold().translate(_CONFUSABLES)
    return re.sub(r"[\s_\-\u2010-\u2015\u2212]+", "-", folded)
