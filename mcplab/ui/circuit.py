"""The stockroom circuit as a notebook panel: the permission model drawn, the ledger, the gate, the trace.

Design: the panel is a view. Every button calls one :class:`~mcplab.stockroom.StockroomAPI`
method (or the short chain the scenario names), keeps the :class:`ToolOutcome` it got back and
redraws from the api (``snapshot`` and ``audit``: observations that call no tool). It decides nothing itself: the
allow-list comes from :func:`~mcplab.stockroom.policy_for`, the diff from ``request_approval``,
the switch from the trace's last ``commit_reorder`` decision. Errors (a server that is down,
``ToolRefused``) land in the result area and are never raised out of a button callback.
:func:`circuit_svg` is a pure function of a :class:`CircuitState`, so tests can read the drawing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..stockroom.catalog import TOOL_NAMES, TOOLS, WRITE_TOOL, policy_for
from ..stockroom.outcome import StockroomAPI, ToolOutcome, ToolRefused
from .rows import frame_html, result_rows, rows_html, short

__all__ = [
    "CIRCUIT_TOOLS",
    "CLEAR_OLD_STOCK_CALL",
    "CSS_CLASSES",
    "LEDGER_COLUMNS",
    "SWITCH_STATES",
    "TRACE_COLUMNS",
    "CircuitPanel",
    "CircuitState",
    "circuit_svg",
]

#: Stable CSS classes of the panel's widgets (``add_class``), for browser tests and notebooks' styling.
CSS_CLASSES: dict[str, str] = {
    "panel": "mcplab-circuit-panel",
    "circuit": "mcplab-circuit",
    "restock": "mcplab-restock",
    "clear_old_stock": "mcplab-clear-old-stock",
    "approve": "mcplab-approve",
    "reject": "mcplab-reject",
    "reset": "mcplab-reset",
    "ledger": "mcplab-ledger",
    "diff": "mcplab-diff",
    "result": "mcplab-result",
    "trace": "mcplab-trace",
}
#: The switch in front of the write tool: nothing approved, an approver is being asked, an approval applied.
SWITCH_STATES = ("open", "pending", "closed")
#: The tool that "Clear old stock" tries: not in the catalog, so the allow-list denies it.
_DENIED_TOOL = "delete_item"
#: What the circuit draws: the four catalog tools, then the one that is not on the allow-list.
CIRCUIT_TOOLS: tuple[str, ...] = (*TOOL_NAMES, _DENIED_TOOL)
#: The exact call behind "Clear old stock".
CLEAR_OLD_STOCK_CALL: tuple[str, dict[str, Any]] = (_DENIED_TOOL, {"sku": "SR-104", "reason": "clear old stock"})
LEDGER_COLUMNS = ("sku", "name", "on_hand", "on_order", "reorder_point", "par")
TRACE_COLUMNS = ("seq", "tool", "decision", "ledger_version", "hash")
_SHORT_HASH = 12


# --------------------------------------------------------------------------------------------
# the drawing
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CircuitState:
    """What the drawing shows: the switch, the last tool the panel called, the ledger version."""

    switch: str = "open"
    last_tool: str | None = None
    ledger_version: int | None = None
    pending_draft: str | None = None


_EFFECT_COLOURS = {"read": "#2e7d32", "draft": "#1565c0", "write": "#c62828"}
_DENY_COLOUR = "#9e9e9e"
_HIGHLIGHT = "#ff8f00"
_SWITCH_COLOURS = {"open": "#c62828", "pending": "#ef6c00", "closed": "#2e7d32"}
_SWITCH_LABELS = {"open": "switch OPEN", "pending": "WAITING for approval", "closed": "switch CLOSED"}
_W, _H = 800, 300
_BUS_Y, _BOX_Y, _BOX_W, _BOX_H = 110, 196, 124, 56
_SLOT_X = (200, 330, 460, 590, 720)


def _text(x: float, y: float, content: str, *, size: int = 12, fill: str = "#212121", anchor: str = "middle",
          weight: str = "normal", cls: str | None = None) -> str:
    klass = f' class="{cls}"' if cls else ""
    return (f'<text x="{x}" y="{y}" font-family="monospace" font-size="{size}" fill="{fill}" text-anchor="{anchor}" '
            f'font-weight="{weight}"{klass}>{html.escape(content)}</text>')


def _switch(x: int, state: str) -> str:
    top, bottom, colour = 140, 172, _SWITCH_COLOURS[state]
    parts = [f'<g class="switch switch-{state}" data-switch="{state}">',
             f'<line x1="{x}" y1="{_BUS_Y}" x2="{x}" y2="{top}" stroke="{_EFFECT_COLOURS["write"]}" stroke-width="2"/>',
             f'<circle cx="{x}" cy="{top}" r="4" fill="{colour}"/>',
             f'<circle cx="{x}" cy="{bottom}" r="4" fill="{colour}"/>',
             f'<line x1="{x}" y1="{bottom}" x2="{x}" y2="{_BOX_Y}" stroke="{_EFFECT_COLOURS["write"]}" stroke-width="2"/>']
    if state == "closed":
        parts.append(f'<line class="lever" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="{colour}" stroke-width="4"/>')
    elif state == "pending":
        parts.append(f'<line class="lever" x1="{x}" y1="{top}" x2="{x + 10}" y2="{bottom - 4}" stroke="{colour}" '
                     'stroke-width="4" stroke-dasharray="5 3"/>')
    else:
        parts.append(f'<line class="lever" x1="{x}" y1="{top}" x2="{x + 26}" y2="{bottom - 14}" stroke="{colour}" '
                     'stroke-width="4"/>')
    parts.append(_text(x - 10, 160, _SWITCH_LABELS[state], size=11, fill=colour, anchor="end", weight="bold",
                       cls="switch-label"))
    parts.append("</g>")
    return "".join(parts)


def _tool(name: str, x: int, last_tool: str | None, switch: str) -> str:
    policy, spec = policy_for(name)
    effect = spec.effect if spec is not None else "deny"
    last = name == last_tool
    classes = ["tool", f"effect-{effect}", "allowed" if policy == "allow" else "denied"] + (["last-called"] if last else [])
    colour = _EFFECT_COLOURS.get(effect, _DENY_COLOUR)
    stroke = _HIGHLIGHT if last else (colour if policy == "allow" else "#c62828")
    width = 4 if last else 2
    left = x - _BOX_W // 2
    parts = [(f'<g class="{" ".join(classes)}" data-tool="{html.escape(name)}" data-effect="{effect}" '
              f'data-policy="{policy}">')]
    if policy != "allow":
        parts += [(f'<line x1="{x}" y1="{_BUS_Y}" x2="{x}" y2="{_BOX_Y}" stroke="{_DENY_COLOUR}" stroke-width="2" '
                   'stroke-dasharray="6 4"/>'),
                  (f'<g class="deny-cross"><line x1="{x - 12}" y1="138" x2="{x + 12}" y2="162" stroke="#c62828" '
                   f'stroke-width="4"/><line x1="{x + 12}" y1="138" x2="{x - 12}" y2="162" stroke="#c62828" '
                   'stroke-width="4"/></g>')]
    elif name == WRITE_TOOL:
        parts.append(_switch(x, switch))
    else:
        parts.append(f'<line x1="{x}" y1="{_BUS_Y}" x2="{x}" y2="{_BOX_Y}" stroke="{colour}" stroke-width="2"/>')
    dash = ' stroke-dasharray="6 4"' if policy != "allow" else ""
    fill = "#fff8e1" if last else ("#ffffff" if policy == "allow" else "#f5f5f5")
    parts.append(f'<rect x="{left}" y="{_BOX_Y}" width="{_BOX_W}" height="{_BOX_H}" rx="6" fill="{fill}" '
                 f'stroke="{stroke}" stroke-width="{width}"{dash}/>')
    parts.append(_text(x, _BOX_Y + 22, name, size=12, weight="bold", fill="#212121" if policy == "allow" else "#757575"))
    parts.append(_text(x, _BOX_Y + 42, f"({effect})", size=12, fill=colour if policy == "allow" else "#c62828",
                       cls="effect"))
    if policy != "allow":
        parts.append(_text(x, _BOX_Y + _BOX_H + 16, "not on allow-list", size=11, fill="#c62828"))
    if last:
        parts.append(_text(x, _BOX_Y + _BOX_H + 34, "\u25b2 last call", size=11, fill=_HIGHLIGHT, weight="bold",
                           cls="last-call-label"))
    parts.append("</g>")
    return "".join(parts)


def circuit_svg(state: CircuitState | Mapping[str, Any]) -> str:
    """The circuit as inline SVG: agent, bus, the tools by effect class, the write switch, the denied tool.

    Pure: the same state gives the same string. The root ``<svg>`` carries ``data-switch`` and
    ``data-last-tool``; each tool is a ``<g class="tool ..." data-tool=... data-effect=... data-policy=...>``.
    """
    if isinstance(state, Mapping):
        state = CircuitState(**state)
    if state.switch not in SWITCH_STATES:
        raise ValueError(f"switch must be one of {SWITCH_STATES}, got {state.switch!r}")
    last = state.last_tool or ""
    heading = "stockroom circuit"
    if state.ledger_version is not None:
        heading += f" \u2014 ledger v{state.ledger_version}"
    if state.switch == "pending" and state.pending_draft:
        heading += f" \u2014 {state.pending_draft} awaiting approval"
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="mcplab-circuit-svg" width="{_W}" height="{_H}" '
              f'viewBox="0 0 {_W} {_H}" role="img" data-switch="{state.switch}" data-last-tool="{html.escape(last)}">'),
             f"<title>{html.escape(heading)}: switch {state.switch}, {_DENIED_TOOL} denied</title>",
             f'<rect x="0" y="0" width="{_W}" height="{_H}" fill="#fafafa"/>',
             _text(20, 28, heading, size=14, anchor="start", weight="bold"),
             '<g class="agent">',
             (f'<rect x="20" y="{_BUS_Y - 25}" width="100" height="50" rx="25" fill="#ede7f6" stroke="#4527a0" '
              'stroke-width="2"/>'),
             _text(70, _BUS_Y + 5, "agent", size=14, fill="#4527a0", weight="bold"),
             "</g>",
             '<g class="bus">',
             f'<line x1="120" y1="{_BUS_Y}" x2="{_W - 16}" y2="{_BUS_Y}" stroke="#424242" stroke-width="4"/>',
             _text(140, _BUS_Y - 10, "bus", size=11, anchor="start", fill="#424242"),
             "</g>"]
    legend_x = 300
    for effect in (*dict.fromkeys(spec.effect for spec in TOOLS), "deny"):
        if effect in _EFFECT_COLOURS:
            parts.append(f'<rect x="{legend_x}" y="48" width="12" height="12" fill="{_EFFECT_COLOURS[effect]}"/>')
        else:
            parts.append(f'<rect x="{legend_x}" y="48" width="12" height="12" fill="#f5f5f5" stroke="#c62828" '
                         'stroke-dasharray="3 2"/>')
        parts.append(_text(legend_x + 18, 58, effect, size=11, anchor="start"))
        legend_x += 80
    for name, x in zip(CIRCUIT_TOOLS, _SLOT_X, strict=True):
        parts.append(_tool(name, x, state.last_tool, state.switch))
    parts.append("</svg>")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# the panel
# --------------------------------------------------------------------------------------------
def _error_dict(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"exception": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ToolRefused):
        out["code"], out["data"] = exc.code, exc.data
    return out


def _pre(value: Any, cls: str = "") -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    klass = f' class="{cls}"' if cls else ""
    return f"<pre{klass} style=\"white-space: pre-wrap; margin: 0\">{html.escape(text)}</pre>"


class CircuitPanel:
    """The stockroom circuit panel: ``CircuitPanel()`` (a fresh in-memory ``Stockroom``) or ``CircuitPanel(client)``.

    ``display(panel)`` or ``panel.widget`` shows it. Read-only state for tests: :attr:`pending`,
    :attr:`last_outcome`, :attr:`switch_state`, :attr:`result`, :meth:`ledger_frame`, :meth:`trace_frame`.
    """

    def __init__(self, api: StockroomAPI | None = None) -> None:
        if api is None:
            from ..stockroom.rules import Stockroom

            api = Stockroom()
        self.api = api
        self._pending: ToolOutcome | None = None
        self._last_outcome: ToolOutcome | None = None
        self._last_tool: str | None = None
        self._result: dict[str, Any] | None = None
        self._diff: list[dict[str, Any]] | None = None
        self._diff_error: dict[str, Any] | None = None
        self._snapshot: dict[str, Any] | None = None
        self._trace: list[dict[str, Any]] | None = None
        self._problems: list[str] | None = None
        self._refresh_errors: list[dict[str, Any]] = []

        def button(key: str, description: str, style: str, tooltip: str, action: Callable[[], None]) -> widgets.Button:
            b = widgets.Button(description=description, button_style=style, tooltip=tooltip,
                               layout=widgets.Layout(width="auto"))
            b.add_class(CSS_CLASSES[key])
            b.on_click(lambda _b: self._run(action))
            return b

        self.restock_button = button("restock", "Restock low items", "primary",
                                     "draft_reorder, then commit_reorder with the draft: stops at the approval gate",
                                     self._restock)
        self.clear_button = button("clear_old_stock", "Clear old stock", "warning",
                                   "delete_item SR-104: not on the allow-list", self._clear_old_stock)
        self.approve_button = button("approve", "Approve", "success", "accept the pending payload", self._approve)
        self.reject_button = button("reject", "Reject", "danger", "decline the pending payload", self._reject)
        self.reset_button = button("reset", "Reset", "", "restore the seed stock (ledger v1)", self._reset)

        def area(key: str) -> widgets.HTML:
            w = widgets.HTML()
            w.add_class(CSS_CLASSES[key])
            return w

        self.circuit_view = area("circuit")
        self.ledger_view = area("ledger")
        self.diff_view = area("diff")
        self.result_view = area("result")
        self.trace_view = area("trace")
        buttons = widgets.HBox([self.restock_button, self.clear_button, self.approve_button, self.reject_button,
                                self.reset_button])
        for view in (self.ledger_view, self.diff_view):  # natural width: a table is never squeezed
            view.layout.width, view.layout.flex = "auto", "0 0 auto"
        self.ledger_view.layout.margin = "0 32px 0 0"
        tables = widgets.HBox([self.ledger_view, self.diff_view], layout=widgets.Layout(flex_flow="row wrap"))
        self.widget = widgets.VBox([self.circuit_view, buttons, tables, self.result_view, self.trace_view])
        self.widget.add_class(CSS_CLASSES["panel"])
        self.refresh()

    # read-only state --------------------------------------------------------------------------
    @property
    def pending(self) -> ToolOutcome | None:
        """The ``commit_reorder`` outcome waiting for an approver, or None."""
        return self._pending

    @property
    def last_outcome(self) -> ToolOutcome | None:
        """The last tool outcome a button produced (None after Reset or an error before any outcome)."""
        return self._last_outcome

    @property
    def result(self) -> dict[str, Any] | None:
        """What the result area shows: the last outcome's ``to_dict()`` or ``{exception, message, ...}``."""
        return self._result

    @property
    def pending_diff(self) -> list[dict[str, Any]] | None:
        """``request_approval``'s diff for the pending payload, or None."""
        return self._diff if self._pending is not None else None

    @property
    def ledger_version(self) -> int | None:
        return None if self._snapshot is None else self._snapshot.get("ledger_version")

    @property
    def trace_problems(self) -> list[str] | None:
        """``api.verify()`` at the last redraw (empty: chain intact; None: could not be read)."""
        return self._problems

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Errors of the last redraw (reading stock or the trace), as shown in the result area."""
        return list(self._refresh_errors)

    @property
    def switch_state(self) -> str:
        """``pending`` while an approver is asked; else ``closed`` if the trace's last commit decision
        since the last reset is an applied approval; else ``open``."""
        if self._pending is not None:
            return "pending"
        for record in reversed(self._trace or []):
            if record.get("era") == "local" and record.get("decision") == "reset":
                return "open"
            if record.get("tool") == WRITE_TOOL and record.get("decision") in ("approved", "rejected"):
                return "closed" if record["decision"] == "approved" else "open"
        return "open"

    def circuit_state(self) -> CircuitState:
        draft = None
        if self._pending is not None and isinstance(self._pending.arguments, dict):
            draft = self._pending.arguments.get("draft_id")
        return CircuitState(switch=self.switch_state, last_tool=self._last_tool, ledger_version=self.ledger_version,
                            pending_draft=draft)

    def ledger_frame(self) -> pd.DataFrame:
        """The ledger at the last redraw; ``frame.attrs["ledger_version"]`` holds its version."""
        items = (self._snapshot or {}).get("items", [])
        frame = pd.DataFrame([{c: item.get(c) for c in LEDGER_COLUMNS} for item in items], columns=list(LEDGER_COLUMNS))
        frame.attrs["ledger_version"] = self.ledger_version
        return frame

    def trace_frame(self) -> pd.DataFrame:
        """The trace at the last redraw: seq, tool, decision, ledger_version and the record hash, shortened."""
        rows = [{"seq": r.get("seq"), "tool": r.get("tool"), "decision": r.get("decision"),
                 "ledger_version": r.get("ledger_version"), "hash": str(r.get("hash", ""))[:_SHORT_HASH]}
                for r in self._trace or []]
        return pd.DataFrame(rows, columns=list(TRACE_COLUMNS))

    def diff_frame(self) -> pd.DataFrame:
        """The pending payload as a table: SKU, name, on_order before and after, and what is added."""
        rows = [{"sku": d.get("sku"), "name": d.get("name"),
                 "on_order": f"{d.get('on_order_before')} -> {d.get('on_order_after')}",
                 "add": f"+{d.get('add_on_order')}"} for d in self.pending_diff or []]
        return pd.DataFrame(rows, columns=["sku", "name", "on_order", "add"])

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # actions: one api call (or the scenario's short chain) each ----------------------------------
    def _run(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - a button callback never raises: the error is shown instead
            self._result = _error_dict(exc)
        self.refresh()

    def _show(self, outcome: ToolOutcome) -> None:
        self._last_outcome = outcome
        self._last_tool = outcome.tool
        self._result = outcome.to_dict()

    def _restock(self) -> None:
        draft = self.api.draft_reorder()
        self._last_tool = "draft_reorder"
        if not draft.get("draft_id"):
            self._result = {"tool": "draft_reorder", "structured": draft}
            return
        outcome = self.api.commit_reorder({k: draft[k] for k in ("draft_id", "ledger_version", "lines")})
        self._show(outcome)
        self._pending, self._diff, self._diff_error = (outcome if outcome.asks_approval else None), None, None
        if self._pending is not None:
            try:
                self._diff = list(self.api.request_approval(draft["draft_id"]).get("diff") or [])
            except Exception as exc:  # noqa: BLE001 - shown in the diff area
                self._diff_error = _error_dict(exc)

    def _clear_old_stock(self) -> None:
        name, arguments = CLEAR_OLD_STOCK_CALL
        self._show(self.api.call_tool(name, dict(arguments)))

    def _answer(self, approve: bool) -> None:
        pending = self._pending
        if pending is None:
            self._result = {"exception": "ValueError", "message": "no approval is pending"}
            return
        # the panel is the person's channel: the trace records it (issue 15)
        outcome = self.api.approve(pending, channel="panel") if approve else self.api.reject(pending, channel="panel")
        self._pending, self._diff = None, None
        self._show(outcome)

    def _approve(self) -> None:
        self._answer(True)

    def _reject(self) -> None:
        self._answer(False)

    def _reset(self) -> None:
        self._pending, self._diff, self._diff_error = None, None, None
        self._last_outcome, self._last_tool = None, None
        snapshot = self.api.reset()
        self._result = {"reset": True, "ledger_version": snapshot.get("ledger_version")}

    # redraw ---------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read stock, trace and chain status from the api and redraw every view. Never raises."""
        self._refresh_errors = []
        try:
            snapshot = self.api.snapshot()
            if not (isinstance(snapshot, dict) and isinstance(snapshot.get("items"), list)
                    and all(isinstance(item, dict) for item in snapshot["items"])):
                raise TypeError(f"snapshot() answered {type(snapshot).__name__}, not {{ledger_version, items}}")
            self._snapshot = snapshot
        except Exception as exc:  # noqa: BLE001 - shown in the result area
            self._snapshot = None
            self._refresh_errors.append({"while": "snapshot", **_error_dict(exc)})
        try:
            records, problems = self.api.audit()
            if not (isinstance(records, list) and all(isinstance(r, dict) for r in records)
                    and isinstance(problems, list) and all(isinstance(p, str) for p in problems)):
                raise TypeError("audit() answered something other than (records, problems)")
            self._trace, self._problems = records, problems
        except Exception as exc:  # noqa: BLE001 - shown in the result area
            self._trace, self._problems = None, None
            self._refresh_errors.append({"while": "trace", **_error_dict(exc)})
        try:
            self._redraw()
        except Exception as exc:  # noqa: BLE001 - a redraw never raises out of a button either
            self.result_view.value = "<b>Could not redraw</b>" + _pre(_error_dict(exc), "mcplab-error")

    def _redraw(self) -> None:
        self.circuit_view.value = circuit_svg(self.circuit_state())
        waiting = self._pending is not None
        self.approve_button.disabled = not waiting
        self.reject_button.disabled = not waiting

        version = self.ledger_version
        heading = f"<b>Ledger v{html.escape(str(version))}</b>" if version is not None else "<b>Ledger (unavailable)</b>"
        self.ledger_view.value = heading + frame_html(self.ledger_frame(), "mcplab-ledger-table")

        if not waiting:
            self.diff_view.value = "<b>Pending approval</b><p>No approval pending.</p>"
        else:
            details = self._pending.approval_details if self._pending else {}
            question = str(details.get("message", "")).splitlines()
            body = f"<p>{html.escape(question[0])}</p>" if question else ""
            body += frame_html(self.diff_frame(), "mcplab-diff-table") if self._diff else ""
            payload = details.get("payload")
            if isinstance(payload, dict):
                body += rows_html([("exact payload", short({k: v for k, v in payload.items() if k != "lines"})),
                                    ("lines", short(payload.get("lines")))], "mcplab-payload-table")
            if self._diff_error:
                body += _pre(self._diff_error, "mcplab-error")
            self.diff_view.value = "<b>Pending approval</b>" + body

        result = "<b>Result</b>" + (rows_html(result_rows(self._result), "mcplab-result-table")
                                    if self._result is not None else "<p>No call yet.</p>")
        if self._refresh_errors:
            result += "<b>Could not redraw</b>" + _pre(self._refresh_errors, "mcplab-error")
        self.result_view.value = result

        if self._problems is None:
            status = "<b>Trace</b> (unavailable)"
        elif not self._problems:
            status = "<b>Trace</b> \u2014 chain intact"
        else:
            status = "<b>Trace</b> \u2014 chain BROKEN" + _pre("\n".join(self._problems), "mcplab-error")
        self.trace_view.value = status + frame_html(self.trace_frame(), "mcplab-trace-table")
