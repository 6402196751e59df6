# expect: 7
# proves: a correct answer written differently from the reference solution gets full marks
# %% answer classify_probe
def classify_probe(observation):
    kind = observation.get("kind")
    if kind == "discover_success":
        listed = observation.get("supportedVersions")
        return "no-evidence" if listed is not None and not set(listed) & set(MODERN_VERSIONS) else "modern"
    if kind == "jsonrpc_error":
        return {True: "modern", False: "no-evidence"}[observation.get("code") in MODERN_ERROR_CODES]
    if kind == "initialize_success":
        return "legacy-evidence" if observation.get("protocolVersion", None) in LEGACY_VERSIONS else "no-evidence"
    return "no-evidence"
# %% answer may_use_legacy
def may_use_legacy(mode, legacy_allowed, observations, legacy_evidence):
    verdicts = [classify_probe(o) for o in observations]
    if mode == "strict" or legacy_allowed is not True or "modern" in verdicts:
        return False
    if legacy_evidence is None:
        return False
    return classify_probe(legacy_evidence) == "legacy-evidence"
