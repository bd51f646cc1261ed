"""Fail when an SDK generator names an operation of openapi.yaml (issue 32 item 3).

Usage: check_generators.py [ROOT]. What an SDK must know of one operation is stated in the
spec (`x-orch8-method`, `x-orch8-retry`, `x-orch8-long-poll`, `x-orch8-sdk`) and reaches
the generators through openapi.sdk.json, so a generator that names an operation is keeping
a per-operation exception of its own. This scans every generator file for each
operationId, `x-orch8-method` and alias of the spec, as written and in the snake_case and
PascalCase forms the SDKs use, as a whole identifier; exits 1 listing every hit.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
VERBS = ("get", "post", "put", "patch", "delete")
# The code that turns openapi.yaml into SDK code (generated output is not listed).
GENERATORS = (
    "scripts/gen_sdk_facts.py",
    "sdk-go/generate.go",
    "sdk-go/oapi-codegen.yaml",
    "sdk-go/oapi-codegen-overlay.yaml",
    "sdk-go/scripts/generate-into.sh",
    "sdk-go/tools/cmd/gencalls/*.go",
    "sdk-go/tools/cmd/genspec/*.go",
    "sdk-python/scripts/generate.sh",
    "sdk-python/codegen/*",
    "sdk-python/codegen/templates/*",
    "sdk-typescript/scripts/generate.mjs",
    "sdk-typescript/scripts/gen-client.mjs",
    "sdk-typescript/scripts/*.json",
)


def operation_names(spec: dict) -> set[str]:
    """Every name an operation goes by: operationId, x-orch8-method and aliases."""
    names: set[str] = set()
    for item in spec["paths"].values():
        for verb in (v for v in VERBS if v in item):
            op = item[verb]
            names |= {op["operationId"], op["x-orch8-method"]}
            names |= set(op.get("x-orch8-sdk", {}).get("aliases", []))
    return names


def spellings(name: str) -> set[str]:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return {name, snake, name[0].upper() + name[1:]}


def generator_files(root: Path) -> list[Path]:
    files = {p for pattern in GENERATORS for p in root.glob(pattern) if p.is_file()}
    return sorted(files)


def hits(root: Path, spec: dict) -> list[str]:
    words = {s: name for name in operation_names(spec) for s in spellings(name)}
    pattern = re.compile(
        r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
    )
    found = []
    for path in generator_files(root):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in pattern.finditer(line):
                where = f"{path.relative_to(root)}:{number}"
                found.append(f"{where}: names operation {words[match[1]]!r} ({match[1]})")
    return found


def main(root: Path) -> int:
    files = generator_files(root)
    if not files:
        print(f"check-generators: no generator files under {root}", file=sys.stderr)
        return 1
    found = hits(root, yaml.load((root / "openapi.yaml").read_text(), Loader=yaml.CSafeLoader))
    for hit in found:
        print(f"check-generators: {hit}", file=sys.stderr)
    if found:
        print(
            "check-generators: a generator special-cases an operation; state the fact in"
            " openapi.yaml instead (x-orch8-sdk, see docs/changing-the-spec.md)",
            file=sys.stderr,
        )
        return 1
    print(f"check-generators: {len(files)} generator files name no operation")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
