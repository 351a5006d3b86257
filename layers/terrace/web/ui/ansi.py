"""Terminal output as HTML: SGR colour codes become `<span class="ansi-…">`, everything else is escaped.

Other escape sequences (cursor moves, OSC titles) are dropped. The result is safe to insert in a page.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

_ESCAPE = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b.?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _classes(bold: bool, faint: bool, underline: bool, fg: int | None, bg: int | None) -> list[str]:
    found = ["ansi-bold"] if bold else []
    found += ["ansi-faint"] if faint else []
    found += ["ansi-underline"] if underline else []
    found += [f"ansi-fg-{fg}"] if fg is not None else []
    found += [f"ansi-bg-{bg}"] if bg is not None else []
    return found


def ansi_to_html(text: str) -> Markup:
    """Render `text` (which may hold ANSI SGR sequences) as escaped HTML with colour spans."""
    bold = faint = underline = False
    fg: int | None = None
    bg: int | None = None
    out: list[str] = []
    position = 0

    def emit(piece: str) -> None:
        piece = _CONTROL.sub("", piece.replace("\r\n", "\n").replace("\r", "\n"))
        if not piece:
            return
        classes = _classes(bold, faint, underline, fg, bg)
        body = str(escape(piece))
        out.append(f'<span class="{" ".join(classes)}">{body}</span>' if classes else body)

    for match in _ESCAPE.finditer(text):
        emit(text[position : match.start()])
        position = match.end()
        if match.group(2) != "m":
            continue
        codes = [int(c) if c else 0 for c in (match.group(1) or "0").split(";")]
        index = 0
        while index < len(codes):
            code = codes[index]
            if code == 0:
                bold = faint = underline = False
                fg = bg = None
            elif code == 1:
                bold = True
            elif code == 2:
                faint = True
            elif code == 4:
                underline = True
            elif code == 22:
                bold = faint = False
            elif code == 24:
                underline = False
            elif 30 <= code <= 37:
                fg = code - 30
            elif 90 <= code <= 97:
                fg = code - 90 + 8
            elif code == 39:
                fg = None
            elif 40 <= code <= 47:
                bg = code - 40
            elif 100 <= code <= 107:
                bg = code - 100 + 8
            elif code == 49:
                bg = None
            elif code in (38, 48):  # 256-colour / truecolour: skip their arguments
                index += 2 if index + 1 < len(codes) and codes[index + 1] == 5 else 4
            index += 1
    emit(text[position:])
    return Markup("".join(out))


def plain(text: str) -> str:
    """`text` without any escape sequence or control character (tabs and newlines kept): the raw log view."""
    text = _ESCAPE.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)
