# expect: 3
# proves: (9) the forbidden call moved to a cell the student added (the answer cell left empty) is still found
# %% answer classify_probe
{{solution classify_probe}}
# %% before may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    decide = select_era
    return decide(observations, mode, legacy_allowed, legacy_evidence)["era"] == "legacy"
# %% answer may_use_legacy
# (defined in the cell above)
