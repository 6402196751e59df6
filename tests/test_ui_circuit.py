"""The circuit panel: the MISSION scenarios clicked through the widgets, in process and over HTTP."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import ipywidgets as widgets
import pytest

from mcplab.stockroom import (
    TOOLS,
    Stockroom,
    StockroomClient,
    ToolRefused,
    serve_stockroom,
)
from mcplab.ui import (
    CIRCUIT_TOOLS,
    CSS_CLASSES,
    CircuitPanel,
    CircuitState,
    circuit_svg,
)

SKUS = ["SR-101", "SR-103", "SR-105", "SR-106"]
MISSION_PAYLOAD = {"draft_id": "DR-0001", "ledger_version": 1,
                   "lines": [{"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
                             {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}
DENIAL = {"error": "tool_not_allowed", "tool": "delete_item", "policy": "deny"}
SVG = "{http://www.w3.org/2000/svg}"


def on_order(panel: CircuitPanel, skus: list[str] = SKUS) -> list[int]:
    return [int(v) for v in panel.ledger_frame().set_index("sku").loc[skus, "on_order"]]


def svg_root(panel_or_svg: CircuitPanel | str) -> ET.Element:
    text = panel_or_svg if isinstance(panel_or_svg, str) else panel_or_svg.circuit_view.value
    return ET.fromstring(text)


def tool_group(root: ET.Element, name: str) -> ET.Element:
    (group,) = [g for g in root.iter(f"{SVG}g") if g.get("data-tool") == name]
    return group


def restock(panel: CircuitPanel) -> None:
    panel.reset_button.click()
    assert panel.ledger_version == 1 and on_order(panel) == [0, 0, 0, 0]
    assert panel.switch_state == "open" and panel.pending is None
    panel.restock_button.click()
    assert panel.pending is not None and panel.pending.asks_approval
    assert panel.pending.approval_details["payload"] == MISSION_PAYLOAD
    assert panel.switch_state == "pending"
    assert not panel.approve_button.disabled and not panel.reject_button.disabled
    assert panel.ledger_version == 1 and on_order(panel) == [0, 0, 0, 0]  # the gate is pending: nothing changed yet
    assert [(d["sku"], d["on_order_before"], d["on_order_after"], d["add_on_order"]) for d in panel.pending_diff] == [
        ("SR-101", 0, 6, 6), ("SR-103", 0, 13, 13), ("SR-105", 0, 3, 3), ("SR-106", 0, 6, 6)]
    diff_html = panel.diff_view.value
    assert "0 -&gt; 13" in diff_html and "+13" in diff_html and "Sandbag, 10 kg" in diff_html
    assert "Approve commit_reorder DR-0001 at ledger v1?" in diff_html  # the approval message itself
    assert svg_root(panel).get("data-switch") == "pending"


def check_approve_scenario(panel: CircuitPanel) -> None:
    restock(panel)
    panel.approve_button.click()
    assert on_order(panel) == [6, 13, 3, 6]
    assert panel.ledger_version == 2 and panel.ledger_frame().attrs["ledger_version"] == 2
    assert panel.switch_state == "closed" and svg_root(panel).get("data-switch") == "closed"
    assert panel.pending is None and panel.approve_button.disabled and panel.reject_button.disabled
    assert panel.last_outcome.structured["ok"] is True and panel.last_outcome.structured["ledger_version"] == 2
    assert panel.result == panel.last_outcome.to_dict()
    trace = panel.trace_frame()
    assert ((trace.tool == "commit_reorder") & (trace.decision == "approved")).any()
    assert panel.trace_problems == [] and "chain intact" in panel.trace_view.value
    assert "Ledger v2" in panel.ledger_view.value and panel.errors == []


# --- the MISSION scenarios, in process -------------------------------------------------------------
def test_restock_and_approve_closes_the_switch_and_updates_the_ledger():
    check_approve_scenario(CircuitPanel())


def test_restock_and_reject_blocks_the_mutation_and_keeps_the_request_in_the_trace():
    panel = CircuitPanel()
    restock(panel)
    panel.reject_button.click()
    assert panel.last_outcome.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
    assert "mutation_blocked" in panel.result_view.value
    assert on_order(panel) == [0, 0, 0, 0] and panel.ledger_version == 1
    assert panel.switch_state == "open" and panel.pending is None
    assert panel.approve_button.disabled and panel.reject_button.disabled
    rejected = [r for r in panel.api.trace() if r["decision"] == "rejected"]
    assert len(rejected) == 1 and rejected[0]["tool"] == "commit_reorder"
    assert rejected[0]["arguments"]["lines"] == MISSION_PAYLOAD["lines"]
    assert "rejected" in panel.trace_view.value and panel.trace_problems == []


def test_clear_old_stock_is_denied_without_asking_anyone():
    panel = CircuitPanel()
    panel.reset_button.click()
    panel.clear_button.click()
    outcome = panel.last_outcome
    assert outcome.kind == "error" and outcome.error["code"] == -32602
    assert outcome.error["data"] == DENIAL
    assert json.loads(json.dumps(panel.result))["error"]["data"] == DENIAL
    assert "tool_not_allowed" in panel.result_view.value
    item = panel.ledger_frame().set_index("sku").loc["SR-104"]
    assert (int(item.on_hand), int(item.on_order)) == (5, 0) and panel.ledger_version == 1
    assert panel.pending is None and panel.switch_state == "open"
    assert panel.approve_button.disabled and panel.reject_button.disabled
    assert "No approval pending" in panel.diff_view.value
    denied = [r for r in panel.api.trace() if r["tool"] == "delete_item"]
    assert [r["decision"] for r in denied] == ["denied"]
    assert not any(r["decision"] == "asked" for r in panel.api.trace())
    assert svg_root(panel).get("data-last-tool") == "delete_item"
    assert "last-called" in tool_group(svg_root(panel), "delete_item").get("class").split()


def test_reset_after_approval_opens_the_switch_and_restores_the_seed():
    panel = CircuitPanel()
    check_approve_scenario(panel)
    panel.reset_button.click()
    assert panel.switch_state == "open" and panel.ledger_version == 1 and on_order(panel) == [0, 0, 0, 0]
    assert panel.last_outcome is None and svg_root(panel).get("data-last-tool") == ""


def test_restock_with_nothing_low_shows_the_draft_and_asks_nobody():
    panel = CircuitPanel()
    check_approve_scenario(panel)
    panel.restock_button.click()
    assert panel.pending is None and panel.switch_state == "closed"
    assert panel.result["structured"]["draft_id"] is None
    assert "nothing is at or below its reorder point" in panel.result_view.value


# --- widgets and classes ------------------------------------------------------------------------------
def test_every_interactive_widget_and_output_area_has_its_css_class():
    panel = CircuitPanel()
    by_key = {"restock": panel.restock_button, "clear_old_stock": panel.clear_button, "approve": panel.approve_button,
              "reject": panel.reject_button, "reset": panel.reset_button, "circuit": panel.circuit_view,
              "ledger": panel.ledger_view, "diff": panel.diff_view, "result": panel.result_view,
              "trace": panel.trace_view, "panel": panel.widget}
    assert set(by_key) == set(CSS_CLASSES)
    for key, widget in by_key.items():
        assert CSS_CLASSES[key] in widget._dom_classes, key
    assert len(set(CSS_CLASSES.values())) == len(CSS_CLASSES)
    assert all(c.startswith("mcplab-") for c in CSS_CLASSES.values())
    assert {CSS_CLASSES[k] for k in ("restock", "clear_old_stock", "approve", "reject", "reset", "ledger", "diff",
                                     "result", "trace", "circuit")} == {
        "mcplab-restock", "mcplab-clear-old-stock", "mcplab-approve", "mcplab-reject", "mcplab-reset", "mcplab-ledger",
        "mcplab-diff", "mcplab-result", "mcplab-trace", "mcplab-circuit"}


def test_the_widget_tree_holds_every_part_and_displays():
    panel = CircuitPanel()

    def walk(w):
        yield w
        for child in getattr(w, "children", ()):
            yield from walk(child)

    found = {cls for w in walk(panel.widget) for cls in w._dom_classes}
    assert set(CSS_CLASSES.values()) <= found
    assert isinstance(panel.widget, widgets.VBox)
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()
    assert [b.description for b in (panel.restock_button, panel.clear_button, panel.approve_button,
                                    panel.reject_button, panel.reset_button)] == [
        "Restock low items", "Clear old stock", "Approve", "Reject", "Reset"]
    assert panel.approve_button.disabled and panel.reject_button.disabled


def test_ledger_frame_has_the_ledger_columns():
    panel = CircuitPanel()
    frame = panel.ledger_frame()
    assert list(frame.columns) == ["sku", "name", "on_hand", "on_order", "reorder_point", "par"]
    assert list(frame.sku) == ["SR-101", "SR-102", "SR-103", "SR-104", "SR-105", "SR-106"]
    assert "Gaffer tape, black 50 mm" in panel.ledger_view.value
    assert list(panel.trace_frame().columns) == ["seq", "tool", "decision", "ledger_version", "hash"]
    assert all(len(h) == 12 for h in panel.trace_frame().hash)


# --- the drawing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("switch", ["open", "pending", "closed"])
def test_circuit_svg_draws_the_switch_state(switch):
    root = svg_root(circuit_svg(CircuitState(switch=switch, ledger_version=1)))
    assert root.get("data-switch") == switch
    (group,) = [g for g in root.iter(f"{SVG}g") if "switch" in (g.get("class") or "").split()]
    assert group.get("data-switch") == switch and f"switch-{switch}" in group.get("class")
    labels = "".join(t.text or "" for t in group.iter(f"{SVG}text"))
    assert {"open": "OPEN", "pending": "WAITING", "closed": "CLOSED"}[switch] in labels


def test_circuit_svg_shows_the_four_tools_by_effect_and_delete_item_denied():
    text = circuit_svg({"switch": "open", "last_tool": "read_stock"})
    assert text == circuit_svg(CircuitState(switch="open", last_tool="read_stock"))  # pure
    root = svg_root(text)
    assert CIRCUIT_TOOLS == ("read_stock", "draft_reorder", "request_approval", "commit_reorder", "delete_item")
    for spec in TOOLS:
        group = tool_group(root, spec.name)
        assert group.get("data-effect") == spec.effect and group.get("data-policy") == "allow"
        assert f"({spec.effect})" in "".join(t.text or "" for t in group.iter(f"{SVG}text"))
    denied = tool_group(root, "delete_item")
    assert denied.get("data-policy") == "deny" and "denied" in denied.get("class").split()
    words = "".join(t.text or "" for t in denied.iter(f"{SVG}text"))
    assert "deny" in words and "not on allow-list" in words
    assert any(el.get("stroke-dasharray") for el in denied.iter())  # dashed
    assert any("deny-cross" in (g.get("class") or "") for g in denied.iter(f"{SVG}g"))  # crossed
    assert "last-called" in tool_group(root, "read_stock").get("class").split()
    assert "last-called" not in tool_group(root, "commit_reorder").get("class").split()
    assert root.find(f"{SVG}g[@class='agent']") is not None and root.find(f"{SVG}g[@class='bus']") is not None


def test_circuit_svg_rejects_an_unknown_switch_state_and_escapes_text():
    with pytest.raises(ValueError):
        circuit_svg(CircuitState(switch="ajar"))
    root = svg_root(circuit_svg(CircuitState(last_tool='<x "y">', pending_draft="<b>", switch="pending")))
    assert root.get("data-last-tool") == '<x "y">'


# --- errors stay in the result area -------------------------------------------------------------------
def test_an_unreachable_server_is_shown_not_raised():
    panel = CircuitPanel(StockroomClient("http://127.0.0.1:9/mcp", timeout=2))
    assert panel.errors and panel.errors[0]["exception"] == "StockroomConnectionError"
    assert "StockroomConnectionError" in panel.result_view.value
    for button in (panel.reset_button, panel.restock_button, panel.clear_button, panel.approve_button,
                   panel.reject_button):
        button.click()  # must not raise
    panel.restock_button.click()
    assert panel.result["exception"] == "StockroomConnectionError" and panel.pending is None
    assert "StockroomConnectionError" in panel.result_view.value and "127.0.0.1:9" in panel.result_view.value
    assert panel.approve_button.disabled and panel.ledger_frame().empty
    assert "unavailable" in panel.trace_view.value


def test_a_tool_refusal_is_shown_not_raised():
    class Refusing(Stockroom):
        def draft_reorder(self):
            raise ToolRefused("draft_reorder: no", code=-32602, data={"error": "invalid_arguments", "tool": "draft_reorder"})

    panel = CircuitPanel(Refusing())
    panel.restock_button.click()
    assert panel.result == {"exception": "ToolRefused", "message": "draft_reorder: no", "code": -32602,
                            "data": {"error": "invalid_arguments", "tool": "draft_reorder"}}
    assert panel.pending is None and "invalid_arguments" in panel.result_view.value


def test_an_answer_after_a_reset_elsewhere_is_an_outcome_in_the_result_area():
    panel = CircuitPanel()
    restock(panel)
    panel.api.reset()  # someone else resets the stockroom while the approver looks at the diff
    panel.approve_button.click()
    assert panel.last_outcome.kind == "error" and panel.last_outcome.error["data"]["error"] == "approval_expired"
    assert panel.pending is None and on_order(panel) == [0, 0, 0, 0] and panel.ledger_version == 1


# --- the same panel over HTTP ---------------------------------------------------------------------------
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_approve_scenario_against_a_real_server(era):
    with serve_stockroom() as srv:
        client = StockroomClient(srv.url, era=era, approver_token=srv.approver_token)
        try:
            panel = CircuitPanel(client)
            check_approve_scenario(panel)
            assert panel.last_outcome.era == era
        finally:
            client.close()


def test_the_reject_and_deny_scenarios_against_a_real_server():
    with serve_stockroom() as srv, StockroomClient(srv.url) as client:
        panel = CircuitPanel(client)
        restock(panel)
        panel.reject_button.click()
        assert panel.last_outcome.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
        assert on_order(panel) == [0, 0, 0, 0]
        panel.reset_button.click()
        panel.clear_button.click()
        assert panel.last_outcome.error["data"] == DENIAL and panel.pending is None and panel.ledger_version == 1


def test_values_from_a_server_are_escaped_in_the_panel():
    from mcplab.stockroom import Stockroom

    class Hostile(Stockroom):
        def snapshot(self):
            return {"ledger_version": "<img src=x onerror=alert(1)>", "items": []}

    panel = CircuitPanel(Hostile())
    assert "<img" not in panel.ledger_view.value and "&lt;img" in panel.ledger_view.value
