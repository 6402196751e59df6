# expect: 0
# proves: plausible wrong answers (resultType compared case-insensitively; description not required) earn nothing
# %% answer result_type_verdict
def result_type_verdict(result, era, method="tools/list", capabilities=None):
    value = str(result.get("resultType", "complete")).lower()
    if "resultType" not in result and era == "modern":
        return ("reject", "negative-modern-missing-result-type")
    if value == "task":
        return ("accept", "task") if tasks_advertised(capabilities) else ("reject", "negative-unadvertised-extension")
    if value not in BASE_RESULT_TYPES:
        return ("reject", "negative-unknown-result-type")
    if value == "input_required" and method not in INPUT_REQUIRED_METHODS:
        return ("reject", "negative-input-required-misplaced")
    return ("accept", value)
# %% answer tools_list_payload_ok
def tools_list_payload_ok(result):
    tools = result.get("tools")
    if not isinstance(tools, list):
        return False
    names = [t.get("name") for t in tools if isinstance(t, dict)]
    return len(names) == len(tools) == len(set(names)) and all(isinstance(n, str) and n for n in names)
