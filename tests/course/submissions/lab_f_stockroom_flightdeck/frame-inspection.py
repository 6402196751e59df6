# expect: 0
# proves: (5) reading the caller's frames for expected values finds none
# %% answer call_decision
import sys


def _peek():
    frame = sys._getframe(2)
    while frame is not None:
        for name in ("_want", "want", "expected"):
            if name in frame.f_locals and isinstance(frame.f_locals[name], str):
                return frame.f_locals[name]
        frame = frame.f_back
    return "may_call"


def call_decision(validation):
    return _peek()
# %% answer approve_restock
def approve_restock(question, snapshot):
    return _peek()
