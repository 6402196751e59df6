# expect: 3
# proves: (9) the forbidden call hidden in a helper the student defined in another cell (the answer only names the helper) is still found
# %% answer classify_probe
{{solution classify_probe}}
# %% before may_use_legacy
if True:  # a definition tucked inside a statement
    def _decide(*args):
        return select_era(*args)
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    return _decide(observations, mode, legacy_allowed, legacy_evidence)["era"] == "legacy"
