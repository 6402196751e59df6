"""Benchmark: validate_request + validate_result over a large batch of realistic recorded messages.

Messages are built from the shipped golden transcripts (real wire shapes), with tool lists of
realistic size. Prints messages/second and the ratio of validation time to plain ``json.loads``
of the same bytes. Usage: ``python benchmarks/validate.py [--messages N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import sys
import time

from mcplab import load_transcripts, validate_request, validate_result


def build_batch(n: int) -> list[tuple[bytes, list[tuple[str, str]], bytes, str, str, dict | None]]:
    """(request bytes, headers, response bytes, method, era, server capabilities) tuples."""
    pairs = []
    for t in load_transcripts():
        if t.cls != "golden":
            continue
        for ex in t.exchanges:
            if not isinstance(ex.response_body, dict) or "result" not in ex.response_body:
                continue
            body = copy.deepcopy(ex.response_body)
            tools = body["result"].get("tools")
            if isinstance(tools, list) and tools:  # a realistic catalogue: 25 tools
                body["result"]["tools"] = [dict(tools[0], name=f"{tools[0]['name']}_{i}") for i in range(25)]
            pairs.append((json.dumps(ex.request).encode(), ex.request_headers, json.dumps(body).encode(),
                          ex.request["method"], t.era, t.server_capabilities))
    return [pairs[i % len(pairs)] for i in range(n)]


def time_parse(batch) -> float:
    start = time.perf_counter()
    for req, _h, resp, *_ in batch:
        json.loads(req)
        json.loads(resp)
    return time.perf_counter() - start


def time_validate(parsed) -> float:
    start = time.perf_counter()
    for req, headers, resp, method, era, caps in parsed:
        validate_request(req, headers, era)
        validate_result(resp["result"], era, method, caps)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000, help="request/response pairs per run (default 20000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the median is reported (default 5)")
    args = parser.parse_args()
    batch = build_batch(args.messages)
    parsed = [(json.loads(r), h, json.loads(b), m, e, c) for r, h, b, m, e, c in batch]
    total_bytes = sum(len(r) + len(b) for r, _h, b, *_ in batch)
    parse = statistics.median(time_parse(batch) for _ in range(args.repeat))
    validate = statistics.median(time_validate(parsed) for _ in range(args.repeat))
    pairs = len(batch)
    print(f"python {platform.python_version()} on {platform.machine()}, {pairs} request/response pairs "
          f"({pairs * 2} messages, {total_bytes / 1e6:.1f} MB), median of {args.repeat} runs")
    print(f"json.loads only:                 {parse:.3f} s  {pairs * 2 / parse:,.0f} messages/s")
    print(f"validate_request+validate_result: {validate:.3f} s  {pairs * 2 / validate:,.0f} messages/s")
    print(f"ratio validation / json.loads:    {validate / parse:.2f}  (target <= 3)")
    print(f"ratio (parse+validate) / parse:   {(parse + validate) / parse:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
