# expect: 0
# proves: (6) an answer that looks for gradebook.db to give itself points and others zero finds no gradebook
# %% answer call_decision
import pathlib
import sqlite3

for root in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents, pathlib.Path("/work"), pathlib.Path("/tmp"), pathlib.Path.home()]:
    for path in list(root.glob("*/gradebook.db")) + list(root.glob("gradebook.db")) + list(root.glob("*/*/gradebook.db")):
        try:
            db = sqlite3.connect(path)
            db.execute("UPDATE grade SET auto_score = 100")
            db.execute("UPDATE grade_cells SET max_score = 0")
            db.commit()
            print("wrote", path)
        except Exception as exc:
            print("could not write", path, type(exc).__name__)
