"""Text of an HTML page: its main content, in paragraphs, without page furniture.

Main content: the page's ``<main>`` or ``role="main"`` element (the one with the
most text if several), else its only ``<article>``, else the whole ``<body>``
(then the ``<title>`` leads the text; an empty ``<main>`` also falls back to the
body). Inside it, navigation and page furniture are dropped: ``<nav>``,
``<footer>``, ``<aside>`` and ``<header>`` (these two only when the whole body
is used: inside ``<main>`` they are footnotes and the page's own title), ARIA
landmark roles of the same meaning (navigation, banner, contentinfo,
complementary, search), hidden elements (``hidden``, ``aria-hidden="true"``),
and non-text elements (scripts, styles, form controls, embedded SVG/MathML/frames).

The charset a ``<meta>`` tag names is honoured when it is a web text encoding
(:func:`html_charset`).
"""

from __future__ import annotations

import codecs
import os
import re

import lxml.etree

from sentient_core.ingest.deadline import Deadline
from sentient_core.ingest.errors import CorruptFile, MismatchedContent

__all__ = ["html_charset", "html_text"]

# Parsing: lxml's HTML parser (libxml2 >= 2.14, an HTML5 tokenizer), chosen on
# measurements (bench/html_scaling.py): linear on every adversarial shape we
# tried, where lexbor (selectolax) is quadratic in nesting depth (1 MB of
# nested <div> took 100 s) and the standard library's HTMLParser is quadratic
# on "<a<a<a…". libxml2 also caps nesting depth (2048 with huge_tree, which
# lifts its 10 MB text-node limit); past the cap it stops, so such a page is
# refused instead of silently cut. Comments (an unclosed "<!--" runs to the
# end of the file) and processing instructions are dropped by the parser.

_HTML_SKIP = (
    "script", "style", "noscript", "template", "svg", "math", "iframe", "object",
    "canvas", "button", "select", "textarea",
)  # fmt: skip
_HTML_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1",
        "h2", "h3", "h4", "h5", "h6", "head", "header", "hr", "html", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "title", "tr", "ul",
    }
)  # fmt: skip
_HTML_CELL = frozenset({"td", "th"})
_MAIN_CANDIDATES = 16
_BOILERPLATE_TAGS = frozenset({"nav", "footer"})
# Outside <main>, these are page furniture too; inside it, an <aside> is a
# footnote or a note and a <header> holds the page's own title.
_BODY_BOILERPLATE_TAGS = _BOILERPLATE_TAGS | {"aside", "header"}
_BOILERPLATE_ROLES = frozenset({"navigation", "complementary", "contentinfo", "search", "banner"})
# One scan finds every element whose role, tag or attributes matter for the
# main-content choice or boilerplate (the tag-only cases are decided in the walk).
_FLAGGED_XPATH = lxml.etree.XPath(
    "descendant-or-self::*[self::main or self::article or @role or @hidden or @aria-hidden]"
)


# --- charset

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)

# Python codec names of the WHATWG Encoding Standard's ASCII-compatible
# encodings. Latin-1 and ASCII labels mean windows-1252 on the web; a
# <meta> that names UTF-16/32 (found by an ASCII scan, so it cannot be
# right) means UTF-8, as the HTML standard says.
_WEB_ENCODINGS: dict[str, str] = {
    name: name
    for name in (
        "utf-8", "cp866", "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6",
        "iso8859-7", "iso8859-8", "iso8859-10", "iso8859-13", "iso8859-14", "iso8859-15",
        "iso8859-16", "koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "cp874", "tis-620",
        "iso8859-11", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256",
        "cp1257", "cp1258", "gbk", "gb2312", "gb18030", "big5", "big5hkscs", "euc_jp",
        "iso2022_jp", "shift_jis", "cp932", "euc_kr", "cp949",
    )
} | {
    "iso8859-1": "cp1252", "ascii": "cp1252", "utf-16": "utf-8", "utf-16-le": "utf-8",
    "utf-16-be": "utf-8", "utf-32": "utf-8", "utf-32-le": "utf-8", "utf-32-be": "utf-8",
}  # fmt: skip


def html_charset(path: str | os.PathLike[str], data: bytes) -> str | None:
    """The codec a ``<meta>`` charset names, ``None`` if none or unknown.

    Raises MismatchedContent when the label names a codec that is not a web
    text encoding (``rot13``, ``base64``, ``hex``, ``zlib``, ``utf-7``, …):
    decoding by it would fail or turn the page into something else.
    """
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    label = match.group(1).decode("ascii")
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None  # an unknown label is ignored, as browsers do
    web = _WEB_ENCODINGS.get(name)
    if web is None:
        raise MismatchedContent(
            path, f"declares charset '{label}', which is not a text encoding for web pages"
        )
    return web


# --- text

# The two Unicode noncharacters that once marked paragraphs and lines inside the
# collected text; the marks are calls now (_Paragraphs), but a page's own copies
# are still removed, so the text stays what it was.
_PARA = "\ufdd0"
_LINE = "\ufdd1"
_BLOCK, _PRE, _BR, _CELL = 1, 2, 3, 4
_ACTION: dict[str, int] = {tag: _BLOCK for tag in _HTML_BLOCK} | {
    "pre": _PRE,
    "br": _BR,
    "td": _CELL,
    "th": _CELL,
}


def _parse_html(path: str | os.PathLike[str], source: str):
    """The document's root element, or ``None`` when there is no element at all."""
    parser = lxml.etree.HTMLParser(
        encoding="utf-8",
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        huge_tree=True,  # lifts the 10 MB text-node cap; the depth cap stays (2048)
        default_doctype=False,
    )
    try:
        root = lxml.etree.fromstring(source.encode("utf-8"), parser=parser)
    except lxml.etree.XMLSyntaxError:
        root = None  # "Document is empty": no elements at all
    last = parser.error_log.last_error
    if last is not None and last.type_name == "ERR_RESOURCE_LIMIT":
        raise CorruptFile(path, f"HTML beyond the parser's limits ({last.message.split(',')[0]})")
    return root


def _text_length(el) -> float:
    return el.xpath("string-length(string())")


def _outermost(candidates: list) -> list:
    kept: list = []
    for el in candidates[:_MAIN_CANDIDATES]:
        if not any(k in kept for k in el.iterancestors()):
            kept.append(el)
    return kept


def _is_hidden(el) -> bool:
    return (
        el.get("role") in _BOILERPLATE_ROLES
        or el.get("hidden") is not None
        or el.get("aria-hidden") == "true"
    )


def _main_content(body, flagged: list) -> tuple[object, bool]:
    """(element holding the main content, whether it is narrower than <body>)."""
    mains = _outermost([el for el in flagged if el.tag == "main" or el.get("role") == "main"])
    if mains:
        return (mains[0] if len(mains) == 1 else max(mains, key=_text_length)), True
    articles = _outermost([el for el in flagged if el.tag == "article"])
    if len(articles) == 1:
        return articles[0], True
    return body, False


def _walk_text(root, skip: set, skip_tags: frozenset[str], deadline: Deadline) -> str:
    """Visible text under ``root`` (without the subtrees in ``skip`` or tagged
    ``skip_tags``), in paragraphs.

    One pass over the tree's start/end events hands text pieces and marks (a
    paragraph before and after a block, a line for a ``<br>`` or a newline
    inside ``<pre>``) to :class:`_Paragraphs`, which makes the text. Element
    texts are only read, never written back (lxml refuses to store control
    characters a page may legally contain).
    """
    out = _Paragraphs()
    pre = 0
    steps = 0
    walk = lxml.etree.iterwalk(root, events=("start", "end"))
    for event, el in walk:
        steps += 1
        if not steps & 0xFFF:
            deadline.check("HTML text")
        tag = el.tag
        action = _ACTION.get(tag)
        if event == "start":
            if tag in skip_tags or el in skip:
                walk.skip_subtree()
                continue
            if action is not None:
                if action == _BR:
                    out.line()
                elif action == _CELL:
                    out.add(" ")
                else:
                    out.paragraph()
                    pre += action == _PRE
            text = el.text
            if text and pre:
                out.add_pre(text)
            elif text:
                out.add(text)
        else:
            if action is not None and tag not in skip_tags and el not in skip:
                if action == _CELL:
                    out.add(" ")
                elif action != _BR:
                    out.paragraph()
                    if action == _PRE:
                        pre = max(0, pre - 1)
            tail = el.tail
            if tail and el is not root and pre:
                out.add_pre(tail)
            elif tail and el is not root:
                out.add(tail)
    return out.text()


class _Paragraphs:
    """Text pieces between paragraph and line marks, made text.

    The words of a line (the pieces between two marks) are joined by single
    spaces (``str.split`` splits on exactly what the regex ``\\s`` matches), the
    non-empty lines of a paragraph by line breaks, the non-empty paragraphs by
    blank lines: a run of marks is a paragraph break if it holds a paragraph
    mark, else a line break, and whitespace next to a mark or at either end
    goes. Each line is joined and split on its own, so the page's text is never
    one string with the marks in it (a mark, outside Latin-1, would make
    Python hold all of it at two bytes a character).
    """

    __slots__ = ("_cur", "_lines", "_paras")

    def __init__(self) -> None:
        self._cur: list[str] = []
        self._lines: list[str] = []
        self._paras: list[str] = []

    def add(self, text: str) -> None:
        self._cur.append(text)

    def add_pre(self, text: str) -> None:
        """Text inside ``<pre>``: its newlines are line marks."""
        first, *rest = text.split("\n")
        self._cur.append(first)
        for part in rest:
            self.line()
            self._cur.append(part)

    def line(self) -> None:
        if self._cur:
            words = "".join(self._cur).split()
            self._cur.clear()
            if words:
                self._lines.append(" ".join(words))

    def paragraph(self) -> None:
        self.line()
        if self._lines:
            self._paras.append("\n".join(self._lines))
            self._lines.clear()

    def text(self) -> str:
        self.paragraph()
        return "\n\n".join(self._paras)


def html_text(path: str | os.PathLike[str], source: str, deadline: Deadline) -> str:
    """The visible main-content text of the decoded page ``source``."""
    if _PARA in source or _LINE in source:
        source = source.replace(_PARA, "").replace(_LINE, "")
    doc = _parse_html(path, source)
    deadline.check("HTML parsing")
    if doc is None:
        return ""
    title_el = doc.find("head/title")
    title = " ".join(title_el.xpath("string()").split()) if title_el is not None else ""
    body = doc.find("body")
    if body is None:
        body = doc
    lxml.etree.strip_elements(body, *_HTML_SKIP, with_tail=False)
    flagged = _FLAGGED_XPATH(body)
    hidden = {el for el in flagged if _is_hidden(el)}
    root, narrowed = _main_content(body, flagged)
    hidden.discard(root)
    deadline.check("HTML cleaning")
    if narrowed:
        text = _walk_text(root, hidden, _BOILERPLATE_TAGS, deadline)
        if text:
            return text
        # An empty <main> (a page filled in by script): fall back to the body.
    text = _walk_text(body, hidden, _BODY_BOILERPLATE_TAGS, deadline)
    if title:
        text = f"{title}\n\n{text}" if text else title
    return text
