"""MkDocs hook: a page embeds a file of the repository at build time, so the site never holds a hand copy of it.

`<!-- include: ARCHITECTURE.md -->` puts the whole file in its place; `<!-- include: ARCHITECTURE.md
section="Security model" -->` only the section whose heading starts with that text (to the next heading of its level
or higher), without that heading, its subsections' headings raised to the level below the page's title. Links of
the embedded text are written relative to the repository root (`docs/reliability.md`, `ARCHITECTURE.md`): they are
rewritten to the site's pages, so `mkdocs build --strict` checks them like any other link. A page of the site embeds
another (`<!-- include: docs/architecture/security-model.md section="Security model" -->`) with its links, which are
relative to the embedded page, made relative to the embedding one.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Files of the repository root that are pages of the site, under another name.
ROOT_PAGES = {"README.md": "index.md", "ARCHITECTURE.md": "architecture.md"}

_DIRECTIVE = re.compile(r'^<!-- include: (?P<path>[\w./-]+)(?: section="(?P<section>[^"]+)")? -->$', re.MULTILINE)
_LINK = re.compile(r"(?<!!)\]\((?P<target>[^)\s#]+\.md)(?P<anchor>#[^)\s]*)?\)")
_HEADING = re.compile(r"^(#{1,6}) ")


def section(text: str, title: str) -> str:
    """The body of the first heading starting with `title`, its subsections raised to level 2."""
    lines = text.splitlines()
    fenced, start, level = False, None, 0
    for index, line in enumerate(lines):
        fenced ^= line.lstrip().startswith("```")
        match = None if fenced else _HEADING.match(line)
        if match is None:
            continue
        if start is None and line[match.end() :].startswith(title):
            start, level = index + 1, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            return _raise_headings(lines[start:index], level - 1)
    if start is None:
        raise ValueError(f"no heading starting with {title!r}")
    return _raise_headings(lines[start:], level - 1)


def _raise_headings(lines: list[str], by: int) -> str:
    out, fenced = [], False
    for line in lines:
        fenced ^= line.lstrip().startswith("```")
        out.append(line[by:] if by and not fenced and _HEADING.match(line) else line)
    return "\n".join(out).strip("\n") + "\n"


def rewrite_links(text: str, page_path: str, source: str = "") -> str:
    """Links relative to the repository root made relative to the page (`page_path`, relative to docs/). The links of
    an embedded page of the site (`source` under docs/) are relative to that page: they are read from its folder."""
    page_dir = posixpath.dirname(page_path)

    def rewrite(match: re.Match[str]) -> str:
        target = match.group("target")
        if "://" in target:
            return match.group(0)
        if source.startswith("docs/"):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if target in ROOT_PAGES:
            in_docs = ROOT_PAGES[target]
        elif target.startswith("docs/"):
            in_docs = target.removeprefix("docs/")
        else:
            return match.group(0)  # left as it is: strict mode reports a link the site cannot follow
        relative = posixpath.relpath(in_docs, page_dir or ".")
        return f"]({relative}{match.group('anchor') or ''})"

    return _LINK.sub(rewrite, text)


def expand(markdown: str, page_path: str) -> str:
    def include(match: re.Match[str]) -> str:
        text = (ROOT / match.group("path")).read_text()
        if match.group("section"):
            text = section(text, match.group("section"))
        return rewrite_links(text, page_path, match.group("path"))

    return _DIRECTIVE.sub(include, markdown)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return expand(markdown, page.file.src_uri)
