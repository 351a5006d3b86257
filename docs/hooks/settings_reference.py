"""MkDocs hook: the settings reference, rendered at build time from the code that reads the settings.

`<!-- settings-reference -->` in a page becomes tables of every `TERRACE_*` variable:
- the server's, from `terrace.config.Settings` (each field's `validation_alias`, type, default, and its description:
  the field's `description`, else the comments written on and above it in the class);
- the runner's, from `terrace.runner.config.RunnerConfig` (the same);
- the `terrace` command's options that read one (typer's `envvar`), with their help;
- any other variable the package or the Lambda functions read (`os.environ.get("TERRACE_...")`), and those the tests,
  benchmarks and tools read, with the files that read them.
Nothing is copied by hand, so a new setting is documented by the build that ships it (tests/unit/test_docs_site.py
checks that every name the code reads is in the rendered page).
"""

from __future__ import annotations

import ast
import html
import inspect
import io
import re
import tokenize
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- settings-reference -->"
_READ = re.compile(r"""(?:environ\.get\(|environ\[|getenv\(|setdefault\()\s*["'](TERRACE_[A-Z0-9_]+)["']""")
_MAKE_ASSIGNMENT = re.compile(r"\b(TERRACE_[A-Z0-9_]+)=")
# Variables the settings build from others (the one name stands for a family of variables).
FAMILIES = {"TERRACE_QUEUE_URLS": "TERRACE_QUEUE_URL_<NAME>"}


def field_comments(cls: type) -> dict[str, str]:
    """The comments on each annotated field of `cls`'s body: the lines of `#` right above it, then the ones on it."""
    source = inspect.getsource(cls)
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    found: dict[str, str] = {}
    class_def = ast.parse(source).body[0]
    assert isinstance(class_def, ast.ClassDef)
    for node in class_def.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        above: list[str] = []
        line = node.lineno - 1
        while line >= 1 and lines[line - 1].strip().startswith("#"):
            above.insert(0, comments[line])
            line -= 1
        on = [comments[n] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1) if n in comments]
        found[node.target.id] = " ".join(above + on)
    return found


def type_name(annotation: Any) -> str:
    """`int`, `str | None`, `dict[str, str]`, `Path | None` (pydantic has taken `Annotated`'s metadata off)."""
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return re.sub(r"\b(?:typing|pathlib|collections\.abc)\.", "", str(annotation)).replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is PydanticUndefined or value is None or value in ((), {}):
        return "unset"
    if isinstance(value, Path):
        value = str(value)
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _cell(text: str) -> str:
    """A table cell: outside code spans `<`, `>`, `&` escaped (a comment's `<NAME>` is text, not a tag) and `|`
    (Python-Markdown's tables read one inside a code span as text, and would show a backslash there)."""
    spans = re.split(r"(`[^`]*`)", text.replace("\n", " "))
    return "".join(
        span if span.startswith("`") else html.escape(span, quote=False).replace("|", "\\|") for span in spans
    )


def model_rows(cls: type[BaseModel]) -> list[tuple[str, str, str, str]]:
    """(variables, type, default, description) of every field of `cls` read from the environment."""
    comments, rows = field_comments(cls), []
    for name, field in cls.model_fields.items():
        alias = field.validation_alias
        names = [n for n in alias.choices if isinstance(n, str)] if isinstance(alias, AliasChoices) else [alias]
        if not names or not all(isinstance(n, str) for n in names):
            continue  # a field no variable sets
        variables = " or ".join(f"`{FAMILIES.get(str(n), n)}`" for n in names)
        description = field.description or comments.get(name, "")
        if field.repr is False:
            description = (description + " " if description else "") + "(A secret: left out of the settings' repr.)"
        rows.append((variables, f"`{type_name(field.annotation)}`", _default(field), description))
    return rows


def cli_rows() -> list[tuple[str, str, str, str]]:
    """(variable, option, default, help) of every `terrace` option that reads a variable."""
    import typer
    from terrace.cli import app

    rows: list[tuple[str, str, str, str]] = []

    def walk(command: Any, path: str) -> None:  # a click command (typer bundles its own click)
        if hasattr(command, "commands"):
            for name, sub in sorted(command.commands.items()):
                walk(sub, f"{path} {name}")
            return
        for param in command.params:
            for variable in [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ()):
                option = max(param.opts, key=len) if param.opts else param.name or ""
                default = param.default if param.default not in (None, (), "") else None
                rows.append(
                    (
                        f"`{variable}`",
                        f"`{path} {option}`",
                        "unset" if default is None else f"`{default}`",
                        getattr(param, "help", None) or "",
                    )
                )

    walk(typer.main.get_command(app), "terrace")
    return rows


def read_in(folders: Iterable[str], known: set[str]) -> dict[str, list[str]]:
    """Variables read in the Python files of `folders` (and set in the Makefile) that are not in `known`."""
    where: dict[str, list[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for variable in _READ.findall(path.read_text()):
                if variable not in known:
                    where.setdefault(variable, []).append(str(path.relative_to(ROOT)))
    return {variable: sorted(set(files)) for variable, files in sorted(where.items())}


def _table(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render() -> str:
    from terrace.config import Settings
    from terrace.runner.config import RunnerConfig

    server, runner, cli = model_rows(Settings), model_rows(RunnerConfig), cli_rows()
    known = {n for rows in (server, runner, cli) for row in rows for n in re.findall(r"TERRACE_[A-Z0-9_]+", row[0])}
    known |= set(FAMILIES)
    code = read_in(("layers", "functions"), known)
    known |= set(code)
    tests = read_in(("tests", "bench", "tools"), known)
    for variable in _MAKE_ASSIGNMENT.findall((ROOT / "Makefile").read_text()):
        if variable not in known:
            tests.setdefault(variable, [])
            if "Makefile" not in tests[variable]:
                tests[variable].append("Makefile")
    header = ("Variable", "Type", "Default", "What it does")
    return "\n".join(
        [
            f"## The server (`terrace.config.Settings`: {len(server)} settings)\n",
            "The API, the workers and `terrace serve` read these (`Settings.from_env`); a bad value stops the"
            " process with a one-line error naming the variable.\n",
            _table(header, server),
            f"## The runner (`terrace.runner.config.RunnerConfig`: {len(runner)} settings)\n",
            "A runner process (`python -m terrace.runner`, the Fargate task, `terrace agent`) reads these"
            " (`RunnerConfig.from_env`).\n",
            _table(header, runner),
            f"## The `terrace` command ({len(cli)} options)\n",
            "Options of the `terrace` command that a variable can give instead.\n",
            _table(("Variable", "Option", "Default", "What it does"), cli),
            f"## Read elsewhere in the code ({len(code)})\n",
            _table(("Variable", "Read by"), ((f"`{v}`", ", ".join(f"`{f}`" for f in fs)) for v, fs in code.items())),
            f"## Tests, benchmarks and tools ({len(tests)})\n",
            _table(("Variable", "Read by"), ((f"`{v}`", ", ".join(f"`{f}`" for f in fs)) for v, fs in tests.items())),
        ]
    )


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
