"""The student release of labs C, D and F in real JupyterLab, in headless Debian Chromium driven by Playwright.

Each lab: Run All on the untouched release stops first at the check of exercise 1 (a display cell
that needs an answer says so instead of raising), and JupyterLab's news prompt, turned off by
``binder/postBuild``, never covers the outputs. Lab C: the observations tables fit the notebook at
the default width. Lab F: click the panel's buttons as a student would: "Restock low items" +
Approve gives ledger v2 and on_order 6, 13, 3, 6, while the approval is pending the ledger's rows
and the diff's rows stay on one line and the result reads as rows; Reset, "Restock low items" +
Reject gives ``mutation_blocked`` and ledger v1. Screenshots go to ``artifacts/browser/`` (gitignored).
Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``, done by ``.ci/run``): without it the
test is skipped, unless ``MCPLAB_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import nbformat
import pytest

from ..conftest import free_port, wait_until
from .conftest import LABS_DIR, REPO

CHROMIUM = Path("/usr/bin/chromium")
LAB = "lab_f_stockroom_flightdeck"
LABS = ("lab_c_sdk_diff", "lab_d_proxy_repair", LAB)
#: JupyterLab's default layout on a laptop screen: the file browser open beside the notebook.
VIEWPORT = {"width": 1280, "height": 800}
NEWS_PROMPT = "official Jupyter news"
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

if not CHROMIUM.exists():
    if os.environ.get("MCPLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium", pytrace=False)
    pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium; .ci/run installs it)", allow_module_level=True)


@pytest.fixture
def jupyterlab(tmp_path):
    """JupyterLab on a loopback port serving copies of the labs C, D and F student notebooks; yields (base url, token).

    Its configuration is what ``binder/postBuild`` writes (run here without ``REPO_DIR``, so it deletes nothing).
    """
    work = tmp_path / "work"
    work.mkdir()
    for lab in LABS:
        shutil.copy(LABS_DIR / f"{lab}.ipynb", work / f"{lab}.ipynb")
    settings, config = tmp_path / "settings", tmp_path / "config"
    build_env = {k: v for k, v in os.environ.items() if k != "REPO_DIR"}
    build_env.update(JUPYTER_CONFIG_DIR=str(config), HOME=str(tmp_path),
                     PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    built = subprocess.run(["bash", str(REPO / "binder" / "postBuild")], env=build_env, capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    # start the notebook's own kernel without asking (the "Select Kernel" dialog otherwise appears at random)
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
               JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "jupyterlab.log", "wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--allow-root", "--ip=127.0.0.1",
                             f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                             f"--ServerApp.root_dir={work}"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, (tmp_path / "jupyterlab.log").read_text()[-3000:]
        try:
            return httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(up, 60, "JupyterLab answering /api/status")
        news = httpx.get(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification", params={"token": token},
                         timeout=10).json()
        assert news["schema"]["properties"]["fetchNews"]["default"] == "false", "binder/postBuild did not turn the news prompt off"
        yield base, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        log.close()


#: The seed's reorder lines: the four low items and what Approve puts on order.
RESTOCK = {"SR-101": 6, "SR-103": 13, "SR-105": 3, "SR-106": 6}


def _check_of_exercise_1(lab: str) -> int:
    """The index of the first check cell (graded, not an answer) of the student release."""
    nb = nbformat.read(str(LABS_DIR / f"{lab}.ipynb"), as_version=4)
    for n, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            return n
    raise AssertionError(f"{lab}: no check cell")


def _run_all(page, base: str, token: str, lab: str) -> None:
    """Open ``lab``, Run All, and wait until it stopped at an error (the front end sometimes drops a Run All sent
    right after the kernel connects: run again, at most three times)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(f"{base}/lab/tree/{lab}.ipynb?token={token}&reset")
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
    dialog = page.locator(".jp-Dialog .jp-mod-accept")
    if dialog.count():  # a kernel chooser despite the setting: take the notebook's own kernel
        dialog.first.click()
    error = page.locator(".jp-OutputArea-output", has_text="NotImplementedError").first
    for attempt in range(3):
        page.click('.lm-MenuBar-itemLabel:text-is("Run")')
        page.click('.lm-Menu-item[data-command="runmenu:run-all"]')
        try:
            page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt", has_text="[1]").first.wait_for(timeout=20_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    error.wait_for(timeout=180_000)
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]')


def _cells_with_errors(page) -> list[int]:
    """Indices (in notebook order) of the cells whose outputs show a traceback."""
    return page.evaluate("""() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap((cell, n) =>
        [...cell.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
            .some(o => /Traceback/.test(o.textContent)) ? [n] : [])""")


def _stops_first_at_the_check_of_exercise_1(page, lab: str) -> None:
    errors, check = _cells_with_errors(page), _check_of_exercise_1(lab)
    assert errors == [check], f"{lab}: Run All shows errors in cells {errors}; the first failure must be the check of exercise 1 (cell {check})"
    cell = page.locator(".jp-Notebook .jp-Cell").nth(check)
    cell.scroll_into_view_if_needed()
    assert "NotImplementedError" in "".join(cell.locator(".jp-OutputArea-output").all_text_contents())
    cell.screenshot(path=str(ARTIFACTS / f"{lab}_first_failure.png"))
    assert page.get_by_text(NEWS_PROMPT).count() == 0, "JupyterLab's news prompt covers the outputs"


def _lines_per_cell(page, selector: str) -> list[int]:
    """For every table cell under ``selector``: on how many lines its text is laid out."""
    return page.evaluate("""(selector) => [...document.querySelectorAll(selector)].map(td => {
        const range = document.createRange();
        range.selectNodeContents(td);
        return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
    })""", selector)


def _ledger(page) -> tuple[str, dict[str, int]]:
    """The panel's ledger as shown: its heading and on_order per sku, read from the page."""
    shown = page.evaluate("""() => {
        const area = document.querySelector('.mcplab-ledger');
        const head = [...area.querySelectorAll('thead th')].map(th => th.textContent.trim());
        const rows = [...area.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(td => td.textContent.trim()));
        return {heading: area.querySelector('b').textContent.trim(), head, rows};
    }""")
    sku, on_order = shown["head"].index("sku"), shown["head"].index("on_order")
    return shown["heading"], {row[sku]: int(row[on_order]) for row in shown["rows"]}


def _restocked(ledger: dict[str, int]) -> list[int]:
    return [ledger[sku] for sku in RESTOCK]


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(60_000)
        try:
            yield page
        finally:
            browser.close()


@pytest.mark.parametrize("lab", ["lab_c_sdk_diff", "lab_d_proxy_repair"])
def test_run_all_stops_first_at_the_check_of_exercise_1_and_tables_say_what_they_need(jupyterlab, browser_page, lab):
    from playwright.sync_api import expect

    base, token = jupyterlab
    page = browser_page
    try:
        _run_all(page, base, token, lab)
        _stops_first_at_the_check_of_exercise_1(page, lab)
        # the display cell before the check ran, and says it needs the answer instead of raising
        expect_text = page.get_by_text("This cell needs your answer to Exercise 1")
        assert expect_text.count() == 1
        # Where am I, refreshed after Run All: exercise 1 not answered, exercise 2's cell not reached, no points yet
        where = page.locator(".mcplab-progress").first
        where.scroll_into_view_if_needed()
        where.locator(".mcplab-progress-refresh").click()
        expect(where).to_contain_text("not answered", timeout=120_000)  # the kernel ran the visible checks
        expect(where).to_contain_text("0 of 7 autograded points")
        rows = [line.split("\t") for line in where.inner_text().splitlines() if line.startswith(("Exercise", "Written"))]
        assert [row[2] for row in rows] == ["not answered", "not run yet", "not written yet (as last saved)"], rows
        where.screenshot(path=str(ARTIFACTS / f"{lab}_where_am_i.png"))
        if lab == "lab_c_sdk_diff":
            # the observations tables fit the notebook: nothing cut off, no scrolling sideways
            overflow = page.evaluate("""() => [...document.querySelectorAll('.jp-OutputArea-output table.dataframe')]
                .filter(t => [...t.querySelectorAll('th')].some(th => ['semanticLoss', 'sdk_exception'].includes(th.textContent.trim())))
                .map(t => ({table: t.scrollWidth, area: t.closest('.jp-OutputArea-output').clientWidth}))""")
            assert len(overflow) == 2 and all(o["table"] <= o["area"] for o in overflow), overflow
            table = page.locator(".jp-OutputArea-output table.dataframe", has_text="semanticLoss").first
            table.scroll_into_view_if_needed()
            table.screenshot(path=str(ARTIFACTS / "lab_c_observations.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"{lab}_failure.png"), full_page=True)
        raise


def test_student_runs_lab_f_and_approves_then_rejects_with_the_panel_buttons(jupyterlab, browser_page):
    from playwright.sync_api import expect

    base, token = jupyterlab
    page = browser_page
    try:
        _run_all(page, base, token, LAB)
        _stops_first_at_the_check_of_exercise_1(page, LAB)
        restock = page.locator(".mcplab-restock").first
        restock.scroll_into_view_if_needed()
        ledger = page.locator(".mcplab-ledger").first
        expect(ledger).to_contain_text("Ledger v1")

        restock.click()
        approve = page.locator(".mcplab-approve").first
        expect(approve).to_be_enabled()
        # while the approval is pending: ledger and diff rows on one line each, the result as rows (no JSON)
        expect(page.locator(".mcplab-diff").first).to_contain_text("Approve commit_reorder DR-0001 at ledger v1?")
        panel = page.locator(".mcplab-circuit-panel").first
        ledger_lines = _lines_per_cell(page, ".mcplab-circuit-panel .mcplab-ledger td")
        diff_lines = _lines_per_cell(page, ".mcplab-circuit-panel .mcplab-diff-table td")
        panel.screenshot(path=str(ARTIFACTS / "lab_f_pending.png"))
        assert len(ledger_lines) == 6 * 6 and set(ledger_lines) == {1}, f"ledger cells wrap: lines per cell {ledger_lines}"
        assert len(diff_lines) == 4 * 4 and set(diff_lines) == {1}, f"diff cells wrap: lines per cell {diff_lines}"
        result = page.locator(".mcplab-result").first
        expect(result).to_contain_text("asks approval")
        assert "inputRequests" not in result.inner_text() and '{"' not in result.inner_text()
        for area in ("diff", "result"):
            shown = page.locator(f".mcplab-{area}").first
            shown.scroll_into_view_if_needed()
            shown.screenshot(path=str(ARTIFACTS / f"lab_f_pending_{area}.png"))

        approve.click()
        expect(ledger).to_contain_text("Ledger v2")
        heading, on_order = _ledger(page)
        assert heading == "Ledger v2" and _restocked(on_order) == [6, 13, 3, 6]
        panel.screenshot(path=str(ARTIFACTS / "lab_f_approved.png"))

        page.locator(".mcplab-reset").first.click()
        expect(ledger).to_contain_text("Ledger v1")
        restock.click()
        reject = page.locator(".mcplab-reject").first
        expect(reject).to_be_enabled()
        reject.click()
        expect(result).to_contain_text("mutation_blocked")
        expect(ledger).to_contain_text("Ledger v1")
        heading, on_order = _ledger(page)
        assert heading == "Ledger v1" and _restocked(on_order) == [0, 0, 0, 0]
        page.screenshot(path=str(ARTIFACTS / "lab_f_rejected.png"), full_page=True)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "lab_f_failure.png"), full_page=True)
        raise
