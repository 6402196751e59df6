# expect: 7
# proves: (2) hidden-check and solution lines a student prints (copied from a public repository) are cut from every output of the feedback
# %% before result_type_verdict
print("""{{hidden result_type_verdict_tests}}""")
print("""{{solution tools_list_payload_ok}}""")
# %% answer result_type_verdict
{{solution result_type_verdict}}
# %% answer tools_list_payload_ok
{{solution tools_list_payload_ok}}
