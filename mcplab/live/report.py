"""The conformance matrix as one self-contained HTML file: case x {direct, via proxy}.

Design: the check result is redacted FIRST (``mcplab.redaction``: Authorization/Cookie headers,
secret-looking keys in bodies and in SSE event data, which captures keep parsed for this reason)
and the page is rendered only from the redacted copy, so no secret can reach the file. A verdict's
free text quotes the body it judged, so every value redaction replaced (and a password in the
URL's userinfo) is also scrubbed from every string of the result (values under 4 characters
excepted: they cannot be told from prose). Every
row whose verdict changed between the direct and the proxied run names the boundary of the
change (intermediary, origin or an unobserved hop) and the case names observed there. Each row
names the authority of its verdict (MUST, schema, SHOULD or course rule, with page and heading),
its warnings (waived SHOULDs and course rules) in their own column, and its evidence.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..outfile import write_regular_file
from ..redaction import REDACTED, redact, scrub_handed
from .check import CheckResult

__all__ = ["render_report", "write_report", "redacted_result"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.35rem .5rem;vertical-align:top;text-align:left}
th{background:#f3f3f3}
.pass{background:#e6f4ea}.fail{background:#fce8e6}.na{background:#f5f5f5;color:#666}.warn{background:#fff4e5}
code{font-size:.85rem}.small{font-size:.8rem;color:#555}
pre{white-space:pre-wrap;font-size:.75rem;background:#fafafa;padding:.5rem;max-height:24rem;overflow:auto}
"""


#: Replaced values shorter than this are not searched for in free text.
_MIN_SCRUBBED = 4


def redacted_result(result: CheckResult) -> dict[str, Any]:
    """The JSON form of ``result`` after redaction (what ``--json`` prints and the report shows).

    Besides the structured redaction, every replaced value is removed from the free text (a
    verdict's detail quotes the body it judged, e.g. ``{'data': {'secret': ...}}``)."""
    data = result.to_dict()
    redacted = redact(data)
    replaced: dict[str, str] = {}
    _replaced_values(data, redacted, replaced)
    for url in (result.url, result.via):  # a password in the URL's userinfo (httpx sends it as Basic auth)
        password = urlsplit(url).password if url else None
        if password:
            replaced.update({password: REDACTED, unquote(password): REDACTED})
    pairs = sorted(((old, new) for old, new in replaced.items() if len(old) >= _MIN_SCRUBBED), key=lambda p: -len(p[0]))
    scrubbed = _scrub(redacted, pairs) if pairs else redacted
    # what the user handed in, wherever a server echoed it (without its "Bearer ", in a message...)
    return scrub_handed(scrubbed, result.handed)


def _spellings(value: Any) -> list[str]:
    """How a replaced value can appear in text: as is, as Python and as JSON quote it."""
    if isinstance(value, str):
        return [value, repr(value)[1:-1], json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]]
    return [repr(value), json.dumps(value, ensure_ascii=False, default=str)]


def _replaced_values(original: Any, redacted: Any, out: dict[str, str]) -> None:
    """Walk ``original`` beside ``redact(original)``: each text that redaction changed -> its replacement."""
    if isinstance(original, dict) and isinstance(redacted, dict):
        for key, value in original.items():
            if key in redacted:
                _replaced_values(value, redacted[key], out)
    elif isinstance(original, (list, tuple)) and isinstance(redacted, list) and len(original) == len(redacted):
        for old, new in zip(original, redacted, strict=True):
            _replaced_values(old, new, out)
    elif redacted == REDACTED and original != REDACTED and original is not None and not isinstance(original, bool):
        # (null, true and false under a secret key hide nothing: scrubbing them would blank ordinary prose)
        out.update(dict.fromkeys(_spellings(original), REDACTED))
    elif isinstance(original, str) and isinstance(redacted, str) and original != redacted:
        out[original] = redacted  # a URL whose secret query parameters were replaced


def _scrub(value: Any, pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for old, new in pairs:
            if old in value:
                value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {key: _scrub(item, pairs) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, pairs) for item in value]
    return value


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return '<td class="na">-</td>'
    css = {"pass": "pass", "fail": "fail"}.get(cell["status"], "na")
    parts = [f"<b>{_e(cell['status'].upper())}</b>"]
    if cell.get("httpStatus") is not None:
        parts.append(f"HTTP {_e(cell['httpStatus'])} <code>{_e(cell.get('contentType') or '')}</code>")
    timing = cell.get("timing") or {}
    if timing.get("eventCount"):
        parts.append(f"{_e(timing['eventCount'])} events, first after {_e(timing['firstEventMs'])} ms of {_e(timing['durationMs'])} ms")
    if cell.get("observed"):
        parts.append(f"observed <code>{_e(cell['observed'])}</code> at the <b>{_e(cell.get('boundary'))}</b>")
    parts.append(f'<span class="small">{_e(cell["detail"])}</span>')
    return f'<td class="{css}">' + "<br>".join(parts) + "</td>"


def _authority(authority: dict[str, Any] | None) -> str:
    if not authority:
        return "-"
    return (f"<b>{_e(authority.get('level'))}</b> <code>{_e(authority.get('where'))}</code><br>"
            f"<span class=small>{_e(authority.get('rule'))}</span>")


def _warnings(cell: dict[str, Any] | None) -> str:
    warnings = (cell or {}).get("warnings") or []
    if not warnings:
        return '<td class="na">none</td>'
    items = "".join(f"<li><code>{_e(w['id'])}</code> ({_e(w['authority']['level'])}, <code>{_e(w['authority']['where'])}</code>): "
                    f"{_e(w['message'])}" + (f" <span class=small>[why the course asks more: {_e(w['authority']['reason'])}]</span>"
                                              if w["authority"].get("reason") else "") + "</li>" for w in warnings)
    return f'<td class="warn"><ul>{items}</ul></td>'


def _change(change: dict[str, Any] | None) -> str:
    if change is None:
        return '<td class="na">none</td>'
    cases = ", ".join(f"<code>{_e(c)}</code>" for c in change["cases"]) or "-"
    return f'<td class="fail">boundary: <b>{_e(change["boundary"])}</b><br>{cases}<br><span class="small">{_e(change["detail"])}</span></td>'


def render_report(result: CheckResult) -> str:
    """The HTML page for ``result`` (rendered from its redacted form only)."""
    data = redacted_result(result)
    era, summary = data["era"], data["summary"]
    via = data["via"]
    rows, skipped = [], []
    for row in data["rows"]:
        if not row["applies"]:
            skipped.append(f"<tr><td><code>{_e(row['case'])}</code></td><td>{_e(row['reason'])}</td></tr>")
            continue
        authority = (row["direct"] or {}).get("authority") or row.get("authority")
        cells = (f"<td>{_authority(authority)}</td>" + _cell(row["direct"]) + _warnings(row["direct"])
                 + (_cell(row["via"]) + _change(row["change"]) if via else ""))
        evidence = html.escape(json.dumps(row["evidence"], indent=1, ensure_ascii=False))
        rows.append(f"<tr><td><code>{_e(row['case'])}</code><br><span class=small>{_e(row['class'])}"
                    f"{', boundary ' + _e(row['boundary']) if row['boundary'] else ''}</span>"
                    f"<details><summary class=small>evidence</summary><pre>{evidence}</pre></details></td>{cells}</tr>")
    head = ("<th>case</th><th>authority of the verdict</th><th>direct</th><th>warnings (SHOULD, course rules)</th>"
            + ("<th>via proxy</th><th>behaviour change</th>" if via else ""))
    verdict = "PASS: every applicable case passed" if data["ok"] else "FAIL"
    via_era = data["viaEra"] or {}
    via_line = f"<li>via proxy: <code>{_e(via)}</code> (era {_e(via_era.get('era'))})</li>" if via else ""
    if via and via_era.get("era") != era.get("era"):  # the probe itself changed through the proxy: a failure of its own
        via_line += (f'<li class="fail">behaviour change in the era decision, boundary: <b>intermediary</b>: directly '
                     f"<code>{_e(era.get('case'))}</code>, through the proxy <code>{_e(via_era.get('case'))}</code> "
                     f"({_e(via_era.get('reason'))})</li>")
    issues = ", ".join(f"<code>{_e(i)}</code>" for i in data["issues"]) or "none"
    era_json = html.escape(json.dumps(era, indent=1, ensure_ascii=False))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mcplab live conformance matrix</title><style>{_STYLE}</style></head>
<body><h1>mcplab live conformance matrix</h1>
<p><b>{_e(verdict)}</b> in {_e(data['seconds'])} s</p>
<ul><li>server: <code>{_e(data['url'])}</code></li>{via_line}
<li>era: <b>{_e(era.get('era'))}</b> (<code>{_e(era.get('case'))}</code>, mode {_e(era.get('mode'))}, legacy allowed:
{_e(era.get('legacyAllowed'))}): {_e(era.get('reason'))}</li>
<li>cases run: {_e(summary['applicable'])}; direct {_e(summary['direct']['passed'])} passed, {_e(summary['direct']['failed'])} failed
{f"; via proxy {_e(summary['via']['passed'])} passed, {_e(summary['via']['failed'])} failed" if via else ""}</li>
<li>issues observed: {issues}</li>
<li>warnings (SHOULDs and course rules, not failures): {", ".join(f"<code>{_e(w)}</code>" for w in data.get("warnings", [])) or "none"}</li></ul>
<details><summary>era decision record</summary><pre>{era_json}</pre></details>
<table><tr>{head}</tr>
{''.join(rows)}
</table>
<h2>Not run live ({len(skipped)})</h2>
<table><tr><th>case</th><th>why</th></tr>{''.join(skipped)}</table>
<p class="small">Every header, body and SSE event above was redacted (mcplab.redaction) before this page was written.</p>
</body></html>
"""


def write_report(path: str | os.PathLike[str], result: CheckResult) -> Path:
    """Write the HTML matrix to the regular file ``path`` (atomically; its folder must exist) and return the path.

    Raises :class:`~mcplab.outfile.OutputPathError` for a device, FIFO, link or directory there.
    """
    return write_regular_file(path, render_report(result), new_mode=0o644)
