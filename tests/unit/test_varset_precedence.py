"""HCP Terraform's variable precedence (domain/varsets.py cites the page), one case per row: which of the values
offered for a key wins."""

from __future__ import annotations

import pytest
from terrace.domain.varsets import GLOBAL, PROJECT, RUN, WORKSPACE, WORKSPACE_SET, Candidate, effective


def c(
    scope: str, name: str = "", priority: bool = False, key: str = "region", category: str = "terraform"
) -> Candidate:
    label = f"{'priority ' if priority else ''}{scope}{':' + name if name else ''}"
    return Candidate(key, category, scope, priority, name, payload=label)


CASES = [
    # (offered, the winner's label)
    ([c(GLOBAL, "g")], "global:g"),
    ([c(GLOBAL, "g"), c(PROJECT, "p")], "project:p"),
    ([c(PROJECT, "p"), c(WORKSPACE_SET, "w")], "workspace:w"),
    ([c(GLOBAL, "a"), c(PROJECT, "z"), c(WORKSPACE_SET, "zz")], "workspace:zz"),
    ([c(WORKSPACE_SET, "w"), c(WORKSPACE)], "workspace-variable"),
    ([c(WORKSPACE), c(RUN)], "run"),
    ([c(GLOBAL, "g"), c(PROJECT, "p"), c(WORKSPACE_SET, "w"), c(WORKSPACE), c(RUN)], "run"),
    # lexical precedence among sets of one scope: the name first in code-point order wins
    ([c(WORKSPACE_SET, "B_Variable_Set"), c(WORKSPACE_SET, "A_Variable_Set")], "workspace:A_Variable_Set"),
    ([c(PROJECT, "b"), c(PROJECT, "B")], "project:B"),  # "B" (U+0042) sorts before "b" (U+0062)
    ([c(GLOBAL, "beta"), c(GLOBAL, "alpha")], "global:alpha"),
    # priority sets beat workspace and run variables...
    ([c(WORKSPACE), c(RUN), c(WORKSPACE_SET, "w", True)], "priority workspace:w"),
    ([c(RUN), c(GLOBAL, "g", True)], "priority global:g"),
    ([c(RUN), c(PROJECT, "p", True)], "priority project:p"),
    # ...and among priority sets the more general scope wins (a priority global set beats everything)
    ([c(WORKSPACE_SET, "w", True), c(PROJECT, "p", True)], "priority project:p"),
    ([c(PROJECT, "p", True), c(GLOBAL, "g", True)], "priority global:g"),
    ([c(WORKSPACE_SET, "a", True), c(WORKSPACE_SET, "b", True)], "priority workspace:a"),
    # a priority set beats a non-priority set of any scope
    ([c(GLOBAL, "g", True), c(WORKSPACE_SET, "w")], "priority global:g"),
    ([c(WORKSPACE_SET, "w", True), c(GLOBAL, "g")], "priority workspace:w"),
]


@pytest.mark.parametrize(("offered", "winner"), CASES)
def test_the_documented_value_wins(offered: list[Candidate], winner: str) -> None:
    assert [w.payload for w in effective(offered)] == [winner]
    assert [w.payload for w in effective(reversed(offered))] == [winner]  # whatever order they come in


def test_keys_conflict_only_within_a_category_and_come_out_sorted() -> None:
    offered = [
        c(RUN, key="region"),
        c(WORKSPACE_SET, "w", key="region", category="env"),
        c(GLOBAL, "g", key="az"),
        c(WORKSPACE, key="region", category="env"),
    ]
    assert [(w.category, w.key, w.payload) for w in effective(offered)] == [
        ("env", "region", "workspace-variable"),
        ("terraform", "az", "global:g"),
        ("terraform", "region", "run"),
    ]
