# expect: 3
# proves: the reference solution of exercise 1 and a wrong exercise 2 (ignores the endpoint's policy) earn exactly exercise 1
# %% answer classify_probe
{{solution classify_probe}}
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    if mode != "fallback" or any(classify_probe(o) == "modern" for o in observations):
        return False
    return legacy_evidence is not None and classify_probe(legacy_evidence) == "legacy-evidence"
