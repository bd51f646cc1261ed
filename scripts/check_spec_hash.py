"""Every generated part names the contract it was built from; they must all agree.

The server and each SDK embed the SHA-256 of the openapi.yaml they were generated from
(so a running server reports it at GET /info and each SDK exposes it). A mismatch means a
part was generated from another contract: regenerate with `make generate`.
Usage: check_spec_hash.py [ROOT]
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

# (part, file relative to the repo root, pattern capturing the hash)
EMBEDDED = [
    ("server", "server/orch8_server/_generated/__init__.py", r'SPEC_SHA256 = "([0-9a-f]{64})"'),
    ("sdk-python", "sdk-python/orch8/_generated/_spec.py", r'SPEC_SHA256\s*(?::\s*\w+)?\s*=\s*"([0-9a-f]{64})"'),
    ("sdk-typescript", "sdk-typescript/src/generated/spec.ts", r'SPEC_SHA256\s*=\s*"([0-9a-f]{64})"'),
    ("sdk-go", "sdk-go/api/spec.gen.go", r'SpecSHA256 = "([0-9a-f]{64})"'),
]


def mismatches(root: Path) -> list[str]:
    want = hashlib.sha256((root / "openapi.yaml").read_bytes()).hexdigest()
    problems = []
    for part, rel, pattern in EMBEDDED:
        path = root / rel
        if not path.exists():
            problems.append(f"{part}: {rel} is missing (it must embed the spec hash)")
            continue
        match = re.search(pattern, path.read_text())
        if match is None:
            problems.append(f"{part}: no spec hash found in {rel}")
        elif match.group(1) != want:
            problems.append(f"{part}: built from spec {match.group(1)[:12]}, openapi.yaml is {want[:12]}")
    return problems


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    problems = mismatches(root)
    for problem in problems:
        print(f"check-spec-hash: {problem}", file=sys.stderr)
    if problems:
        print("fix: run 'make generate' and commit the result", file=sys.stderr)
        return 1
    print(f"check-spec-hash: server and {len(EMBEDDED) - 1} SDKs agree on the contract")
    return 0


if __name__ == "__main__":
    sys.exit(main())
