# expect: 7
# proves: (extra) a cell that asks for 64 GiB fails alone under the memory limit; the grader and the other cells go on
# %% before result_type_verdict
hog = bytearray(64 * 1024**3)
# %% answer result_type_verdict
{{solution result_type_verdict}}
# %% answer tools_list_payload_ok
{{solution tools_list_payload_ok}}
