# expect: 0
# proves: a plausible wrong answer (silence taken as legacy evidence, fallback without permission) earns nothing
# %% answer classify_probe
def classify_probe(observation):
    if observation["kind"] in ("discover_success",):
        return "modern"
    if observation["kind"] == "jsonrpc_error":
        return "modern" if observation["code"] in MODERN_ERROR_CODES else "no-evidence"
    if observation["kind"] in ("timeout", "empty_response", "initialize_success"):
        return "legacy-evidence"
    return "no-evidence"
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    return mode == "fallback" and all(classify_probe(o) != "modern" for o in observations)
