"""The UI's focus rings and form field borders reach 3:1 against the backgrounds they sit on (WCAG 2.2's non-text
contrast, 1.4.11), computed from the colours terrace.css gives them."""

from __future__ import annotations

import re
from pathlib import Path

import terrace

CSS = (Path(terrace.__file__).parent / "web" / "static" / "terrace.css").read_text()
BACKGROUNDS = ("#ffffff", "#f6f8fa")  # fields and controls sit on white (header, tables, forms) or the page's --bg


def luminance(hex_colour: str) -> float:
    """WCAG 2's relative luminance of #rrggbb or #rgb."""
    digits = hex_colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def variables() -> dict[str, str]:
    return dict(re.findall(r"(--[\w-]+)\s*:\s*(#[0-9a-fA-F]{3,6})\b", CSS))


def rules() -> list[tuple[str, str]]:
    """(selector, declarations) of every rule outside @media blocks, comments removed."""
    text = re.sub(r"/\*.*?\*/", "", CSS, flags=re.S)
    return [(sel.strip(), body) for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", text)]


def colour_of(declarations: str, prop: str) -> list[str]:
    """The colours a rule's `prop` (e.g. border, outline) declarations name, var() resolved."""
    found = []
    names = variables()
    for value in re.findall(rf"(?:^|;)\s*{prop}(?:-color)?\s*:\s*([^;]+)", declarations):
        for var in re.findall(r"var\((--[\w-]+)\)", value):
            found.append(names[var])
        found += re.findall(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b", value)
    return found


def test_the_contrast_formula_matches_wcags_reference_values() -> None:
    assert round(contrast("#000000", "#ffffff"), 1) == 21.0
    assert round(contrast("#767676", "#ffffff"), 2) == 4.54  # the usual 4.5:1 grey


def test_focus_rings_reach_3_to_1_on_every_background() -> None:
    focus = [(sel, body) for sel, body in rules() if ":focus-visible" in sel]
    covered = {part.strip().split(":")[0] for sel, _ in focus for part in sel.split(",")}
    assert {"a", "button", "input", "select", "textarea", "summary", "pre"} <= covered
    for selector, body in focus:
        colours = colour_of(body, "outline")
        assert colours, f"{selector} has no outline colour"
        for colour in colours:
            for background in BACKGROUNDS:
                assert contrast(colour, background) >= 3, f"{selector}: {colour} on {background}"


def test_form_field_borders_reach_3_to_1() -> None:
    fields = [(sel, body) for sel, body in rules() if re.search(r"input\[type=text\]|\btextarea\b|\bselect\b", sel)]
    bordered = [(sel, colour_of(body, "border")) for sel, body in fields if colour_of(body, "border")]
    assert {"input", "textarea", "select"} <= {
        name for sel, _ in bordered for name in ("input", "textarea", "select") if name in sel
    }
    for selector, colours in bordered:
        if "aria-invalid" in selector:
            continue
        for colour in colours:
            for background in BACKGROUNDS:
                assert contrast(colour, background) >= 3, f"{selector}: border {colour} on {background}"
