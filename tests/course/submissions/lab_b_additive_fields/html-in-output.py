# expect: 7
# proves: (extra) HTML and script a submission displays never reach the instructor's formgrader or the feedback page as markup
# %% before result_type_verdict
from IPython.display import HTML, Javascript, display
display(HTML("<b>bold</b><script>alert('mcplab-xss-marker-1')</script><img src=x onerror=\"alert('mcplab-xss-marker-2')\">"))
display(Javascript("alert('mcplab-xss-marker-3')"))
# %% answer result_type_verdict
{{solution result_type_verdict}}
# %% answer tools_list_payload_ok
{{solution tools_list_payload_ok}}
