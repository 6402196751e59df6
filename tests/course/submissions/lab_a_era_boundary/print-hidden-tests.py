# expect: 0
# proves: (2) an answer that prints the hidden tests it can find shows nothing secret: they never enter the sandbox
# %% answer classify_probe
import pathlib

for pattern in ("**/lab_a_era_boundary.ipynb", "**/gradebook.db", "**/nbgrader_config.py"):
    for root in (pathlib.Path.cwd(), pathlib.Path.home(), pathlib.Path("/tmp"), pathlib.Path("/work"), pathlib.Path("/root")):
        try:
            for path in list(root.glob(pattern))[:5]:
                text = path.read_text(errors="replace")
                print(path, text[text.find("HIDDEN"):][:3000])
        except OSError as exc:
            print("cannot read", root, type(exc).__name__)
