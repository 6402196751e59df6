"""Notebook views over the library: ipywidgets panels, tables and drawings (views only, no rules).

``from mcplab.ui import CircuitPanel``: the stockroom circuit (Part 2).
"""

from .circuit import (
    CIRCUIT_TOOLS,
    CLEAR_OLD_STOCK_CALL,
    CSS_CLASSES,
    LEDGER_COLUMNS,
    SWITCH_STATES,
    TRACE_COLUMNS,
    CircuitPanel,
    CircuitState,
    circuit_svg,
)

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
