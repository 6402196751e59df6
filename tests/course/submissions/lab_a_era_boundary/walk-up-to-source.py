# expect: 0
# proves: (1) an answer that looks for the course's source notebook and runs its solution cells finds nothing in the sandbox
# %% answer classify_probe
import json
import pathlib

import mcplab

here = pathlib.Path.cwd()
candidates = [p / "source" / "lab_a_era_boundary" / "lab_a_era_boundary.ipynb" for p in [here, *here.parents]]
candidates += [p / "graders" / "source" / "lab_a_era_boundary" / "lab_a_era_boundary.ipynb"
               for p in [here, *here.parents, *pathlib.Path(mcplab.__file__).parents]]
candidates += list(pathlib.Path("/").glob("*/*/graders/source/lab_a_era_boundary/lab_a_era_boundary.ipynb"))
candidates += list(pathlib.Path("/").glob("*/*/*/source/lab_a_era_boundary/lab_a_era_boundary.ipynb"))
for path in candidates:
    try:
        nb = json.loads(path.read_text())
    except OSError:
        continue
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            exec("".join(cell["source"]), globals())
    print("found the source at", path)
    break
else:
    print("no source notebook in reach")
