# expect: 3
# proves: (9) an exercise that forbids select_era gives 0 to an answer that calls it, however right it is
# %% answer classify_probe
{{solution classify_probe}}
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    return select_era(observations, mode, legacy_allowed, legacy_evidence)["era"] == "legacy"
