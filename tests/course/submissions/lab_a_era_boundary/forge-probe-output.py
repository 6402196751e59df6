# expect: 0
# proves: (extra) forging the probe's output (a fake probe display, a patched probe module) is no more than returning those values
# %% answer classify_probe
from IPython.display import display

import mcplab.course.probe as probe

display({probe.MIME: {"probe": "classify_probe_tests", "results": [{"ok": True, "value": "modern"}] * 40}}, raw=True)


def fake_run(grade_id, plan):
    import json
    calls = json.loads(plan)
    display({probe.MIME: {"probe": grade_id, "results": [{"ok": True, "value": "no-evidence"} for _ in calls]}}, raw=True)


probe.run = fake_run


def classify_probe(observation):
    return "no-evidence"
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    return False
