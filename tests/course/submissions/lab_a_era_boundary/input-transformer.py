# expect: 0
# proves: (3) an input transformer that turns every later cell into `pass` gains nothing: points come from the judge
# %% answer classify_probe
get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\n"])
