"""Remove the `cloud` block from a run's root module: the runner's backend override takes its place.

Terraform >= 1.1 and OpenTofu clients send configurations whose `terraform {}` block holds a `cloud {}`
block naming this server. In the run, state goes through the runner's `remote` backend override instead
(`TF_FORCE_LOCAL_BACKEND=1` as HCP Terraform's own workers do), and a runner binary older than 1.1 does not
even parse a `cloud` block ("Blocks of type "cloud" are not expected here"). So the runner deletes it from
the root module's `.tf` and `.tf.json` files before `init`, keeping every line number of the file.

HCL is scanned, not parsed: strings (with `${...}` templates holding strings of their own), comments and
heredocs are masked first, so braces inside them never count.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\n")
_TERRAFORM = re.compile(r"(?:^|(?<=[\s}]))terraform\s*\{")
_CLOUD = re.compile(r"(?:^|(?<=[\s{;]))cloud\s*\{")


def mask(text: str) -> str:
    """`text` with the contents of strings, comments and heredocs blanked (newlines kept); same length."""
    out = list(text)
    i, n = 0, len(text)
    stack: list[int] = []  # open templates inside strings: brace depth of each, innermost last

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            if ch == "\\":
                blank(i, i + 2)
                i += 2
                continue
            if ch == '"':
                in_string = False
                i += 1
                continue
            if text.startswith(("${", "%{"), i) and not text.startswith(("$${", "%%{"), i - 1 if i else 0):
                stack.append(0)
                in_string = False
                blank(i, i + 2)
                i += 2
                continue
            blank(i, i + 1)
            i += 1
            continue
        if stack:  # inside a template: code whose braces belong to the string
            if ch == "{":
                stack[-1] += 1
            elif ch == "}":
                if stack[-1] == 0:
                    stack.pop()
                    in_string = True
                    blank(i, i + 1)
                    i += 1
                    continue
                stack[-1] -= 1
            if ch == '"':
                in_string = True
            elif ch not in "\n":
                out[i] = " "
            i += 1
            continue
        if ch == '"':
            in_string = True
            i += 1
        elif ch == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif (heredoc := _HEREDOC.match(text, i)) is not None:
            closing = re.compile(rf"^[ \t]*{re.escape(heredoc.group(1))}[ \t]*$", re.MULTILINE)
            found = closing.search(text, heredoc.end())
            end = n if found is None else found.end()
            blank(i, end)
            i = end
        else:
            i += 1
    return "".join(out)


def _closing_brace(masked: str, opening: int) -> int:
    """Index of the `}` matching the `{` at `opening` (len(masked) when unbalanced)."""
    depth = 0
    for k in range(opening, len(masked)):
        if masked[k] == "{":
            depth += 1
        elif masked[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(masked)


def _top_level_blocks(masked: str, pattern: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of blocks matching `pattern` at brace depth 0 of masked[start:end]."""
    found: list[tuple[int, int]] = []
    depth, k = 0, start
    while k < end:
        ch = masked[k]
        if depth == 0 and (match := pattern.match(masked, k)) is not None and match.end() <= end:
            close = _closing_brace(masked, match.end() - 1)
            found.append((k, min(close + 1, end)))
            k = close + 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        k += 1
    return found


def strip_hcl(text: str) -> str:
    """`text` without `cloud {}` blocks directly inside top-level `terraform {}` blocks; line numbers kept."""
    masked = mask(text)
    spans: list[tuple[int, int]] = []
    for start, end in _top_level_blocks(masked, _TERRAFORM, 0, len(masked)):
        body_start = masked.index("{", start) + 1
        spans.extend(_top_level_blocks(masked, _CLOUD, body_start, end - 1))
    for start, end in reversed(spans):
        text = text[:start] + "\n" * text.count("\n", start, end) + text[end:]
    return text


def strip_json(document: Any) -> bool:
    """Deletes `cloud` from the `terraform` object(s) of a .tf.json document; True when it changed."""
    if not isinstance(document, dict):
        return False
    blocks = document.get("terraform")
    changed = False
    for block in blocks if isinstance(blocks, list) else [blocks]:
        if isinstance(block, dict) and "cloud" in block:
            del block["cloud"]
            changed = True
    return changed


def strip_cloud_blocks(module_dir: Path) -> list[str]:
    """Removes `cloud` blocks from the root module's files; returns the names of the files changed."""
    changed: list[str] = []
    for path in sorted(module_dir.iterdir()):
        if path.is_symlink() or not path.is_file():
            continue
        if path.name.endswith(".tf"):
            text = path.read_text(errors="surrogateescape")
            if "cloud" not in text:
                continue
            stripped = strip_hcl(text)
            if stripped != text:
                path.write_text(stripped, errors="surrogateescape")
                changed.append(path.name)
        elif path.name.endswith(".tf.json"):
            try:
                document = json.loads(path.read_text())
            except (ValueError, UnicodeDecodeError):
                continue  # terraform reports it
            if strip_json(document):
                path.write_text(json.dumps(document, indent=2))
                changed.append(path.name)
    return changed
