# expect: 0
# proves: (5) reading the caller's frames for expected values finds none: the probe that calls you knows no answer
# %% answer result_type_verdict
import sys


def _look_up(*names):
    frame = sys._getframe(2)
    while frame is not None:
        for name in names:
            if name in frame.f_locals:
                return frame.f_locals[name]
        frame = frame.f_back
    return None


def result_type_verdict(result, era, method="tools/list", capabilities=None):
    return _look_up("_want", "want", "expected", "_expected")
# %% answer tools_list_payload_ok
def tools_list_payload_ok(result):
    return _look_up("_want", "want", "expected", "_expected")
