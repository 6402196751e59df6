"""The Binder configuration: repo2docker reads binder/, picks Python 3.11 and installs this package."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from .conftest import REPO

BINDER = REPO / "binder"
SCRIPTS = Path(sys.executable).parent


def _pins() -> dict[str, str]:
    pins = {}
    for line in (BINDER / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and line != ".":
            name, _, version = line.partition("==")
            assert version, f"binder/requirements.txt: {line!r} is not pinned with =="
            pins[name.lower()] = version
    return pins


def test_repo2docker_picks_python_3_11_and_installs_the_package_after_copying_the_repository():
    out = subprocess.run([str(SCRIPTS / "repo2docker"), "--no-build", "--debug", str(REPO)], capture_output=True, text=True,
                         timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-2000:]
    dockerfile = out.stdout + out.stderr
    assert "python=3.11" in dockerfile
    copy_repo = dockerfile.index("COPY --chown=0:0 src/ ${REPO_DIR}/")
    install = re.search(r'RUN \$\{KERNEL_PYTHON_PREFIX\}/bin/pip install .*-r "binder/requirements.txt"', dockerfile)
    assert install and install.start() > copy_repo, "the requirements (with '.') must be installed after the repository is copied"
    assert "postBuild" in dockerfile
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    assert "." in [line.strip() for line in (BINDER / "requirements.txt").read_text().splitlines()]


def test_binder_pins_satisfy_the_package_requirements():
    pins = _pins()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["course"]]
    for req in needed:
        assert req.name.lower() in pins, f"binder/requirements.txt does not pin {req.name}"
        assert req.specifier.contains(pins[req.name.lower()]), f"binder pins {req.name}=={pins[req.name.lower()]}, pyproject needs {req.specifier}"


def _copy_of_the_repository(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    for part in ("binder", "labs", "mcplab/ui/lab_settings"):
        shutil.copytree(REPO / part, copy / part)
    (copy / "graders" / "source" / "lab_x").mkdir(parents=True)
    (copy / "graders" / "source" / "lab_x" / "lab_x.ipynb").write_text("### BEGIN SOLUTION")
    (copy / "tests" / "course" / "submissions").mkdir(parents=True)
    (copy / ".git" / "objects").mkdir(parents=True)  # the history holds the answer key too
    return copy


def test_post_build_hides_the_instructor_panels_and_drops_the_answer_key(tmp_path):
    repo = _copy_of_the_repository(tmp_path)
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path / ".jupyter"), REPO_DIR=str(repo),
               PATH=os.pathsep.join([str(SCRIPTS), os.environ.get("PATH", "")]))
    assert (BINDER / "postBuild").read_text().splitlines()[:5].count("set -e") == 1
    out = subprocess.run(["bash", str(repo / "binder" / "postBuild")], env=env, capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL, cwd=repo)
    assert out.returncode == 0, out.stderr[-2000:]
    assert not (repo / "graders").exists() and not (repo / "tests").exists() and not (repo / ".git").exists()
    assert (repo / "labs").is_dir() and (repo / "binder").is_dir()
    disabled = json.loads((tmp_path / ".jupyter" / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    assert disabled == {f"@jupyter/nbgrader:{p}": True for p in ("formgrader", "create-assignment", "course-list", "assignment-list")}


def test_post_build_deletes_nothing_outside_binders_own_copy(tmp_path):
    repo = _copy_of_the_repository(tmp_path)
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path / ".jupyter"),
               PATH=os.pathsep.join([str(SCRIPTS), os.environ.get("PATH", "")]))
    env.pop("REPO_DIR", None)
    out = subprocess.run(["bash", str(repo / "binder" / "postBuild")], env=env, capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL, cwd=repo)
    assert out.returncode == 0 and (repo / "graders").is_dir() and (repo / ".git").is_dir()  # a developer running it by hand loses nothing


def test_students_are_not_sent_to_the_answer_key():
    text = (REPO / "labs" / "README.md").read_text()
    assert "graders" not in text and "solution" not in text.lower() and "hidden tests" not in text.lower()


def test_the_readme_badge_opens_the_first_lab_in_full_jupyterlab():
    from mcplab.course import LABS

    readme = (REPO / "README.md").read_text()
    badge = re.search(r"\(https://mybinder\.org/v2/gh/[^)\s]+\)", readme)
    assert badge, "README has no Binder badge link"
    assert badge.group(0).endswith(f"?urlpath=lab/tree/labs/{LABS[0]}.ipynb)")
    assert (REPO / "labs" / f"{LABS[0]}.ipynb").is_file()
