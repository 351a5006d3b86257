"""The documentation site (mkdocs.yml, docs/) builds in strict mode, its settings reference names every variable
the code reads, and README.md stays a landing page whose links lead somewhere.

The build runs once for the module (about 6 s on 2 cores): a broken link or anchor, a page missing from the
navigation or a hook's error fails it, as `make docs` does.
"""

from __future__ import annotations

import html
import importlib.util
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from mkdocs.config import load_config
from terrace.config import Settings
from terrace.runner.config import RunnerConfig
from test_architecture_doc import stale_paths

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 200
_QUOTED_VARIABLE = re.compile(r"""["'](TERRACE_[A-Z0-9_]*[A-Z0-9])["']""")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def _hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # never --quiet: mkdocs then drops the warnings that strict mode counts, and a broken link passes
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def test_the_site_builds_in_strict_mode(site: Path) -> None:
    assert (site / "index.html").is_file()
    home = (site / "index.html").read_text()
    assert "Two commands" in home and 'href="getting-started/"' in home  # README.md, its links made the site's
    architecture = (site / "architecture" / "index.html").read_text()
    assert "The layer rule" in architecture  # ARCHITECTURE.md, embedded whole
    assert (site / "architecture" / "security-model" / "index.html").is_file()  # its details, pages of their own
    security = (site / "security" / "index.html").read_text()
    # the architecture's security model page, embedded: the three rules and every detail of the sandbox
    assert "Tenant code has no environment" in security and "setpriv" in security and "The layer rule" not in security


def test_strict_mode_checks_links_anchors_and_the_navigation() -> None:
    config = load_config(str(ROOT / "mkdocs.yml"))
    assert config.strict is True
    links, nav = config.validation.links, config.validation.nav
    assert {links.not_found, links.anchors, links.unrecognized_links, nav.omitted_files} == {logging.WARNING}
    make_docs = (ROOT / "Makefile").read_text().split("\ndocs: install\n", 1)[1].split("\n\n", 1)[0]
    assert "mkdocs build --strict" in make_docs and "-q" not in make_docs.split() and "--quiet" not in make_docs


def _variables_in_code() -> set[str]:
    names: set[str] = set()
    for folder in ("layers", "functions"):
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(_QUOTED_VARIABLE.findall(path.read_text()))
    for model in (Settings, RunnerConfig):
        for field in model.model_fields.values():
            alias = field.validation_alias
            choices = getattr(alias, "choices", [alias])
            names |= {name for name in choices if isinstance(name, str)}
    return names


def test_the_settings_reference_names_every_variable_the_code_reads(site: Path) -> None:
    page = (site / "reference" / "settings" / "index.html").read_text()
    families = _hook("settings_reference").FAMILIES
    names = _variables_in_code()
    assert len(names) > 90  # the scan itself works
    missing = sorted(n for n in names if n not in page and html.escape(families.get(n, n)) not in page)
    assert missing == []
    assert "TERRACE_PORT" in page and "terrace serve --port" in page  # the command's options
    assert "TERRACE_PROOF_SEED" in page  # what the tests and the Makefile read


def test_the_reference_takes_each_description_from_the_code() -> None:
    reference = _hook("settings_reference")
    comments = reference.field_comments(Settings)
    assert comments["policy_timeout_s"].startswith("an OPA policy evaluation")  # the comment lines above
    assert comments["public_url"] == "absolute links"  # the comment on the line
    rows = {row[0]: row for row in reference.model_rows(RunnerConfig)}
    assert rows["`TERRACE_RUNNER_WAIT_S`"][1:3] == ("`float`", "`5.0`")
    assert rows["`TERRACE_API_URL`"][2] == "required"
    assert reference._cell("`str | None` or a | b") == "`str | None` or a \\| b"  # a code span keeps its pipe
    assert reference._cell("the TERRACE_QUEUE_URL_<NAME> variables") == "the TERRACE_QUEUE_URL_&lt;NAME&gt; variables"


def test_an_include_takes_one_section_and_rewrites_its_links() -> None:
    includes = _hook("includes")
    text = (
        "# Title\n\n## One\nfirst\n### Sub\n```sh\n# not a heading\n```\n"
        "see [r](docs/reliability.md#x), [a](ARCHITECTURE.md), [w](https://e.org/a.md)\n## Two\nsecond\n"
    )
    body = includes.section(text, "One")
    assert body.startswith("first\n## Sub\n") and "# not a heading" in body and "second" not in body
    assert includes.rewrite_links(body, "aws/page.md").endswith(
        "see [r](../reliability.md#x), [a](../architecture.md), [w](https://e.org/a.md)\n"
    )
    with pytest.raises(ValueError):
        includes.section(text, "Three")
    # a page of the site embedded in another: its links are relative to itself
    links = "[o](../architecture.md), [s](storage.md#k)"
    embedded = includes.rewrite_links(links, "security.md", "docs/architecture/x.md")
    assert embedded == "[o](architecture.md), [s](architecture/storage.md#k)"


def test_readme_is_a_landing_page_whose_links_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    targets = [t for t in _LINK.findall(readme) if "://" not in t]
    assert len(targets) > 20
    assert [t for t in targets if not (ROOT / t).is_file()] == []


def test_docs_pages_name_only_paths_that_exist() -> None:
    pages = sorted((ROOT / "docs").rglob("*.md"))
    assert len(pages) > 20
    assert {str(p.relative_to(ROOT)): stale_paths(p.read_text()) for p in pages if stale_paths(p.read_text())} == {}
