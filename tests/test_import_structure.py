"""What a fresh interpreter imports for the light entry points: structure, not timings.

A lab's setup cell, ``mcplab check`` against an unreachable URL, and a plain ``import mcplab`` must
not pull in the heavy stacks they do not use (jsonschema, the mcp SDK, uvicorn, matplotlib,
pandas where a lab does not ask for it), and jsonschema, where it is used, must not compile the
IRI grammar of ``rfc3987-syntax`` at import (mcplab checks no ``format``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("jsonschema", "rfc3987_syntax", "mcp", "mcp_types", "uvicorn", "matplotlib", "pandas", "ipywidgets")


def loaded_after(code: str) -> set[str]:
    """The top-level packages among :data:`HEAVY` that ``code`` leaves in ``sys.modules`` of a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("code", [
    "import mcplab",
    "import mcplab.live.check",
    "import mcplab.live.proxy",
    "import mcplab.stockroom",
    "import mcplab.flightdeck.validation",
    "import mcplab.serving, mcplab.request_guard",
    "import mcplab.reference",
])
def test_library_modules_load_no_heavy_stack(code):
    assert loaded_after(code) == set()


def test_check_against_an_unreachable_url_loads_no_heavy_stack():
    code = ("import sys\nfrom mcplab.cli import main\n"
            "sys.argv = ['mcplab', 'check', '--url', 'http://127.0.0.1:9/mcp']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    assert loaded_after(code) == set()


@pytest.mark.parametrize("code, allowed", [
    # lab D and lab E setup cells: pandas is theirs; the SDK loads when a server starts
    ("import pandas\nfrom mcplab.live import PROXY_MODES, capture_client, proxy_record, send, serve_proxy\n"
     "from mcplab.stockroom import serve_stockroom, stream_health_window", {"pandas"}),
    ("from mcplab.stockroom import SEED_ITEMS, TOOL_NAMES, Stockroom, policy_for, serve_stockroom", set()),
    # lab A: the reference server's SDK loads when serve_reference is called
    ("from mcplab import CASES, select_era, validate_result\nfrom mcplab.live.capture import capture_client\n"
     "from mcplab.live.check import probe_era\nfrom mcplab.reference import serve_reference", set()),
])
def test_lab_setup_imports_leave_the_sdk_for_the_cells_that_use_it(code, allowed):
    assert loaded_after(code) == allowed


def test_jsonschema_loads_on_first_schema_check_without_the_iri_grammar():
    code = ("from mcplab.flightdeck.validation import check_arguments\n"
            "out = check_arguments({'type': 'object', 'properties': {'n': {'type': 'integer'}}}, {'n': 'x'})\n"
            "assert out['checked'] and out['valid'] is False, out")
    assert loaded_after(code) == {"jsonschema"}


def test_iri_format_checks_still_work_when_someone_asks_for_them():
    code = ("from mcplab._schema import jsonschema\n"
            "checker = jsonschema().FormatChecker()\n"
            "assert checker.conforms('http://example.com/a', 'iri') and not checker.conforms('http://a/b c', 'iri')\n"
            "import rfc3987_syntax\n"
            "assert rfc3987_syntax.is_valid_syntax('iri', 'http://example.com/')")
    assert "rfc3987_syntax" in loaded_after(code)
