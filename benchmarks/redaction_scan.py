"""Redaction figures: how long the text rules (rules version 4) take on large and hostile strings.

    python benchmarks/redaction_scan.py [--mib 16]

Prints seconds per case for ``mcplab.redaction.redact`` on one string: ordinary text, prose,
base64, a typical JSON-RPC body, and adversarial repetitions aimed at each text rule (every rule
is linear; a hostile MiB must not take seconds).
"""

from __future__ import annotations

import argparse
import json
import time

from mcplab.redaction import REDACTION_RULES_VERSION, redact


def cases(mib: int) -> dict[str, str]:
    size = mib * 2**20
    one = 2**20
    return {
        f"{mib} MiB 'a b c'": "a b c " * (size // 6),
        f"{mib} MiB prose": "hello world, this is a sentence of typical prose. " * (size // 50),
        f"{mib} MiB base64": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * (size // 35),
        "1 MiB JSON-RPC tools/list": json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": f"t{i}", "description": "reads the stock of one item", "inputSchema": {"type": "object"}}
            for i in range(10000)]}}),
        "1 MiB 'a:\"' (pair rule)": 'a:"' * (one // 3),
        "1 MiB 'token=x&' (pair rule)": "token=x&" * (one // 8),
        "1 MiB 'Bearer ' (credential rule)": "Bearer " * (one // 7),
        "1 MiB 'http://' (URL rule)": "http://" * (one // 7),
        "1 MiB BEGIN PRIVATE KEY (key rule)": "-----BEGIN PRIVATE KEY-----" * (one // 27),
        "1 MiB 'eyJa.' (token rule)": "eyJa." * (one // 5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=16, help="size of the large cases (default 16)")
    args = parser.parse_args()
    print(f"redaction rules v{REDACTION_RULES_VERSION}")
    for name, text in cases(args.mib).items():
        started = time.perf_counter()
        redact({"s": text})
        print(f"{name:40} {time.perf_counter() - started:6.2f} s")


if __name__ == "__main__":
    main()
