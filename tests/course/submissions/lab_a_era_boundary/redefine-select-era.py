# expect: 0
# proves: (4) redefining the answer key's globals (select_era) beside a wrong answer gains nothing
# %% answer classify_probe
def select_era(*args, **kwargs):
    return {"era": "modern", "case": "era-strict-modern-proven", "reason": "forged", "nextStep": None,
            "observations": [], "legacyEvidence": None, "mode": "strict", "legacyAllowed": False}


import mcplab

mcplab.select_era = select_era
import mcplab.era

mcplab.era.select_era = select_era


def classify_probe(observation):
    return "modern"
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    return True
