# expect: 0
# proves: (9) both exercises forbid validate_result: right answers that call it get 0, also through an alias or a star import
# %% answer result_type_verdict
from mcplab import validate_result as judge_it


def result_type_verdict(result, era, method="tools/list", capabilities=None):
    try:
        return "accept", judge_it(dict(result), era, method, capabilities)
    except ProtocolViolation as violation:
        if violation.case in ("negative-modern-missing-result-type", "negative-unadvertised-extension",
                              "negative-unknown-result-type", "negative-input-required-misplaced"):
            return "reject", violation.case
        return "accept", result.get("resultType", "complete")
# %% answer tools_list_payload_ok
def tools_list_payload_ok(result):
    try:
        validate_result(dict(result), "modern", "tools/list")
        return True
    except ProtocolViolation:
        return False
