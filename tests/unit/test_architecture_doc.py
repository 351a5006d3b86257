"""ARCHITECTURE.md and the architecture pages of the docs site (`docs/architecture/`, where its details live) name
modules and folders: each one they name must exist. ARCHITECTURE.md stays the overview read in one sitting.

Every backticked token that looks like a path (`services/workflows/purge.py`, `web/routers/`,
`runner/job_folder.py: JobFolder`) is resolved under `layers/terrace/`, or under the repository
root for the top-level folders (`tests/`, `infra/`, `functions/`, ...). Placeholders
(`<area>`, `*`) match any entry of their folder. A bare module name (`dynamo_table.py`) must name
a file somewhere in the package or those folders. A renamed or moved module fails here until the
map is updated.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "terrace"
DOC = ROOT / "ARCHITECTURE.md"
# The overview's details: the pages it links to, each checked as the overview is.
DETAILS = ROOT / "docs" / "architecture"
OVERVIEW_MAX_LINES = 320

# Folders at the repository root, outside the package.
TOP_LEVEL = (
    "tests",
    "infra",
    "functions",
    "bench",
    "docs",
    "runner-container",
    "server-container",
)
# First segments of the package's own folders (and top-level modules).
PACKAGE_ROOTS = tuple(sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))))
PACKAGE_MODULES = tuple(sorted(p.name for p in PACKAGE.glob("*.py")))

_SPAN = re.compile(r"`([^`\n]+)`")
# A module or folder path: segments of word characters, dots, dashes, `<placeholders>` and `*`,
# ending in a known suffix, a slash or `/*`.
_PATH = re.compile(r"^[\w.<>*-]+(?:/[\w.<>*-]+)*(?:\.(?:py|html|sh|toml|json|md)|/|/\*)$")
_BARE_MODULE = re.compile(r"^[\w-]+\.(?:py|html)$")


def _candidates(span: str) -> list[str]:
    """The path(s) a backticked span names: `a/b.py: Name` -> `a/b.py`; `a/b.py|c` -> no path."""
    head = span.split(":", 1)[0].strip()
    if " " in head or not _PATH.match(head):
        return []
    if "/" not in head.rstrip("/"):
        # A bare module name (`dynamo_table.py`, `base.html`): checked by name, anywhere (`_known_names`).
        return [head] if _BARE_MODULE.match(head) else []
    return [head]


def _known_names() -> set[str]:
    names = {p.name for p in PACKAGE.rglob("*")}
    for folder in TOP_LEVEL:
        names |= {p.name for p in (ROOT / folder).rglob("*")}
    return names


def _base(path: str) -> Path | None:
    first = path.split("/", 1)[0]
    if first in TOP_LEVEL:
        return ROOT
    if first in PACKAGE_ROOTS or first in PACKAGE_MODULES:
        return PACKAGE
    return None


def _exists(base: Path, path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    current = [base]
    for part in parts:
        if "<" in part or "*" in part:
            pattern = re.sub(r"<[^>]*>", "*", part)
            current = [m for c in current if c.is_dir() for m in c.glob(pattern)]
        else:
            current = [c / part for c in current if (c / part).exists()]
        if not current:
            return False
    return True


def doc_paths(text: str) -> list[str]:
    return [path for span in _SPAN.findall(text) for path in _candidates(span)]


def stale_paths(text: str) -> list[str]:
    stale, names = [], _known_names()
    for path in doc_paths(text):
        if "/" not in path:
            if path not in names:
                stale.append(path)
            continue
        base = _base(path)
        if base is not None and not _exists(base, path):
            stale.append(path)
    return sorted(set(stale))


def _architecture_texts() -> dict[str, str]:
    pages = [DOC, *sorted(DETAILS.glob("*.md"))]
    return {str(page.relative_to(ROOT)): page.read_text() for page in pages}


def test_architecture_doc_names_only_paths_that_exist() -> None:
    stale = {name: stale_paths(text) for name, text in _architecture_texts().items()}
    assert {name: paths for name, paths in stale.items() if paths} == {}


def test_the_overview_stays_an_overview_and_links_its_details() -> None:
    overview = DOC.read_text()
    assert len(overview.splitlines()) <= OVERVIEW_MAX_LINES
    pages = sorted(DETAILS.glob("*.md"))
    assert len(pages) >= 8
    # every detail page is linked from the overview, and every page the overview links to is there
    linked = set(re.findall(r"\]\((docs/architecture/[\w-]+\.md)(?:#[^)]*)?\)", overview))
    assert linked == {str(page.relative_to(ROOT)) for page in pages}


def test_the_check_sees_paths_and_catches_a_stale_one() -> None:
    text = (
        "`services/workflows/purge.py`, `web/routers/`, `runner/job_folder.py: JobFolder`, "
        "`tests/unit/test_layer_rule.py`, `bootstrap.py`, `services/<area>/`, `web/routers/*`"
    )
    assert len(doc_paths(text)) == 7
    assert stale_paths(text) == []
    assert stale_paths("`services/events_gone.py`, `infra/nowhere/`, `gone_table.py: Gone`") == [
        "gone_table.py",
        "infra/nowhere/",
        "services/events_gone.py",
    ]


def test_the_doc_names_enough_paths_to_be_checked() -> None:
    # Guards the extraction itself: a regex that matched nothing would pass vacuously.
    assert len(set(doc_paths(DOC.read_text()))) > 60
    assert len({path for text in _architecture_texts().values() for path in doc_paths(text)}) > 300
