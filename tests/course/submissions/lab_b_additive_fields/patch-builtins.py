# expect: 4
# proves: (extra) patching the library, the judge's modules and builtins inside the kernel changes nothing the judge computes
# %% answer result_type_verdict
import builtins
import mcplab
import mcplab.course.judge
import mcplab.course.values
mcplab.validate_result = lambda *a, **k: "complete"
mcplab.course.values.same = lambda got, want: True
mcplab.course.judge.judge = lambda *a, **k: None
builtins.AssertionError = type("NeverRaised", (Exception,), {})


def result_type_verdict(result, era, method="tools/list", capabilities=None):
    return ("accept", "complete")
# %% answer tools_list_payload_ok
{{solution tools_list_payload_ok}}
