"""Notebook views over the library: ipywidgets panels, tables and drawings (views only, no rules).

``from mcplab.ui import CircuitPanel``: the stockroom circuit (Part 2).
"""

from . import circuit
from .circuit import *  # noqa: F403

__all__ = list(circuit.__all__)
