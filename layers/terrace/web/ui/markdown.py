"""A registry module's README as HTML: CommonMark by markdown-it-py with raw HTML off (a README's `<script>`,
`<img onerror>` or `<iframe>` is shown as text), links only to http(s), mailto or relative addresses (markdown-it
refuses `javascript:`, `vbscript:`, `file:` and `data:`), each opened with `rel="nofollow noopener noreferrer"`,
no images (the page's CSP loads none from elsewhere; an image shows its alt text), and its headings under
the page's own (`#` is an h3). Bounded by the length the
registry keeps of a README (`services/registry/module_archive.py: README_MAX_CHARS`)."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markupsafe import Markup

_REL = "nofollow noopener noreferrer"


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})

    def link_open(renderer: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", _REL)
        return str(renderer.renderToken(tokens, idx, options, env))

    def image(renderer: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        return escapeHtml(renderer.renderInlineAsText(tokens[idx].children or [], options, env))

    def shift_headings(state: Any) -> None:  # the README sits under the page's h2 "README": its # is an h3
        for token in state.tokens:
            if token.type in ("heading_open", "heading_close"):
                token.tag = f"h{min(6, int(token.tag[1]) + 2)}"

    md.core.ruler.push("shift_headings", shift_headings)
    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    return md


_MD = _renderer()


def readme_html(text: str) -> Markup:
    """`text` (Markdown) as HTML safe to put in a page: what markdown-it writes escapes every text and attribute."""
    return Markup(_MD.render(text))  # noqa: S704 - markdown-it's output with raw HTML off, escaped by it
