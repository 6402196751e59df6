"""The circuit panel's tables and result as readable rows (HTML), not JSON.

Design: a table cell never wraps (an item name stays on one line) and the panel wraps whole
tables instead, so the ledger stays legible at JupyterLab's default width; an outcome is shown
as (label, value) rows with long structures summed up in one line. Every value is escaped.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

__all__ = ["frame_html", "result_rows", "rows_html", "short"]

#: Table cells never wrap (an item name stays on one line); the panel wraps whole tables instead.
_CELL = "white-space: nowrap; text-align: left; padding: 2px 10px 2px 0"
_ROW_LIMIT = 200


def frame_html(frame: pd.DataFrame, cls: str) -> str:
    """A DataFrame as a compact HTML table whose cells do not wrap (the values escaped)."""
    head = "".join(f'<th style="{_CELL}">{html.escape(str(c))}</th>' for c in frame.columns)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{html.escape(short(v))}</td>' for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return (f'<table class="dataframe {cls}" style="border-collapse: collapse; width: auto; margin: 4px 0">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def short(value: Any) -> str:
    """One readable line for a value: lists of {sku, ...} as 'SR-101 0 -> 6', dicts as 'key value'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if {"on_order_before", "on_order_after"} <= value.keys():
            return f"{value.get('sku', '?')} on_order {value['on_order_before']} -> {value['on_order_after']}"
        if {"sku", "add_on_order"} <= value.keys():
            return f"{value['sku']} +{value['add_on_order']}"
        return ", ".join(f"{k} {short(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(short(v) for v in value) if value else "(none)"
    text = str(value)
    return text if len(text) <= _ROW_LIMIT else text[:_ROW_LIMIT] + "\u2026"


def result_rows(result: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """What the result area shows, as (label, value) rows: the outcome's own fields, not its JSON.

    An approval request is summed up by its question line (the pending diff shows the lines), a
    sealed ``requestState`` by its length.
    """
    rows: list[tuple[str, str]] = []
    for key, value in result.items():
        if key == "inputRequests" and isinstance(value, dict):
            for name, request in value.items():
                params = request.get("params", {}) if isinstance(request, dict) else {}
                message = str(params.get("message", "")).splitlines()
                rows.append((f"asks {name}", message[0] if message else short(request)))
        elif key == "requestState":
            rows.append(("requestState", "sealed by the server: sent back with the answer"))
        elif key in ("structured", "error") and isinstance(value, dict) and not prefix:
            rows.extend(result_rows(value, "" if key == "structured" else "error "))
        elif key in ("changes", "lines") and isinstance(value, list) and value:
            rows.extend((prefix + key if i == 0 else "", short(v)) for i, v in enumerate(value))
        else:
            rows.append((prefix + key, short(value)))
    return rows


def rows_html(rows: list[tuple[str, str]], cls: str) -> str:
    body = "".join(f'<tr><th style="{_CELL}; font-weight: normal; color: #616161">{html.escape(label)}</th>'
                   f'<td style="white-space: pre-wrap; text-align: left">{html.escape(value)}</td></tr>' for label, value in rows)
    return f'<table class="{cls}" style="border-collapse: collapse; width: auto; margin: 4px 0"><tbody>{body}</tbody></table>'
