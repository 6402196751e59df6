# expect: 7
# proves: correct answers written differently from the reference solutions get full marks
# %% answer result_type_verdict
def result_type_verdict(result, era, method="tools/list", capabilities=None):
    missing = object()
    value = result.get("resultType", missing)
    if value is missing:
        return ("accept", "complete") if era == "legacy" else ("reject", "negative-modern-missing-result-type")
    if value == "task" and isinstance(value, str):
        ok = era == "modern" and tasks_advertised(capabilities)
        return ("accept", "task") if ok else ("reject", "negative-unadvertised-extension")
    allowed = list(BASE_RESULT_TYPES) if era == "modern" else ["complete"]
    if type(value) is not str or value not in allowed:
        return ("reject", "negative-unknown-result-type")
    if value == "input_required" and method not in INPUT_REQUIRED_METHODS:
        return ("reject", "negative-input-required-misplaced")
    return ("accept", value)
# %% answer tools_list_payload_ok
def tools_list_payload_ok(result):
    tools = result.get("tools")
    if type(tools) is not list:
        return False
    seen = []
    for d in tools:
        try:
            name, desc, schema = d["name"], d["description"], d["inputSchema"]
        except (TypeError, KeyError, IndexError):
            return False
        if not (isinstance(name, str) and name and name not in seen):
            return False
        if not (isinstance(desc, str) and desc.strip()):
            return False
        if not (isinstance(schema, dict) and schema.get("type") == "object"):
            return False
        seen.append(name)
    cursor = result.get("nextCursor", "")
    return isinstance(cursor, str)
