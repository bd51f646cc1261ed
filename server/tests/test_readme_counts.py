"""The conformance totals the READMEs state are the ones on disk, so they cannot go stale.

The root README said "30 scenarios" and "90 runs" long after the suite grew (issue 31).
Every total it states (`N scenarios`, `N runs`, `N SDKs`), and the two places
conformance/README.md states the current total, must equal the scenario files in
conformance/scenarios and the SDKs of conformance/adapters.json; a README may also name no
number at all. Historical measurements ("168 runs in 378 s") are not totals and not checked.
"""

from __future__ import annotations

import json
import re

from conftest import REPO

SCENARIOS = REPO / "conformance" / "scenarios"


def _totals() -> tuple[int, int]:
    scenarios = len(list(SCENARIOS.glob("*.json")))
    adapters = json.loads((REPO / "conformance" / "adapters.json").read_text())
    return scenarios, len([name for name in adapters if not name.startswith("$")])


def _stated(text: str, patterns: dict[str, str]) -> list[tuple[str, int]]:
    """(what, number) for each match of the patterns; "1,234" reads as 1234."""
    return [
        (what, int(m[1].replace(",", "")))
        for what, pattern in patterns.items()
        for m in re.finditer(pattern, text, re.MULTILINE)
    ]


def test_root_readme_states_the_conformance_totals_on_disk() -> None:
    scenarios, sdks = _totals()
    want = {"scenarios": scenarios, "runs": scenarios * sdks, "SDKs": sdks}
    text = (REPO / "README.md").read_text()
    stated = _stated(text, {w: rf"\b(\d[\d,]*) {w}\b" for w in want})
    wrong = [f"{n} {what} (want {want[what]})" for what, n in stated if n != want[what]]
    assert not wrong, f"README.md: {wrong}; count with `ls conformance/scenarios | wc -l`"


def test_conformance_readme_states_the_scenario_count_on_disk() -> None:
    scenarios, sdks = _totals()
    text = (REPO / "conformance" / "README.md").read_text()
    stated = _stated(
        text,
        {
            "scenarios": r"\((\d+) scenarios x \d+ SDKs\)",
            "SDKs": r"\(\d+ scenarios x (\d+) SDKs\)",
            "the scenarios": r"^The (\d+) scenarios \(",
        },
    )
    assert len(stated) == 3, f"conformance/README.md no longer states its totals: {stated}"
    want = {"scenarios": scenarios, "SDKs": sdks, "the scenarios": scenarios}
    wrong = [f"{n} {what} (want {want[what]})" for what, n in stated if n != want[what]]
    assert not wrong, (
        f"conformance/README.md: {wrong}; a scenario was added or removed in "
        f"{SCENARIOS.relative_to(REPO)}: update the totals (and the table of scenarios)"
    )
