"""The built notebook in a real browser (Playwright driving Debian's Chromium, headless).

Skipped where Chromium or Playwright is missing, unless NOTEBOOK_REQUIRE_BROWSER=1 (as in
.ci/run), where a missing browser is a failure. Screenshots land in test-artifacts/."""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.browser
ARTIFACTS = ROOT / "test-artifacts"
PAGES = ["", "dashboard/", "analysis/", "vec_add/", "vec_add_3d/", "softmax/", "coalescing/", "matrix_add_2d/", "add_broadcast/", "warp_primitives/", "memory_types/", "block_reduce/",
         "gpu/", "time_breakdown/", "matmul/", "matmul_fp16/", "cublas/", "triton/", "cutile_add/"]
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def _chromium() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[test]')"
    if reason is None and _chromium() is None:
        reason = "Chromium is not installed (apt-get install chromium)"
    if reason:
        if os.environ.get("NOTEBOOK_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests required but {reason}")
        pytest.skip(reason)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_site):
    handler = functools.partial(QuietHandler, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


def open_page(browser, url, scheme="light"):
    """A page with console errors and any request leaving the machine recorded."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
    page.errors, page.external = [], []
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.on("pageerror", lambda e: page.errors.append(str(e)))

    def route(r):
        if r.request.url.startswith(url.split("/", 3)[0] + "//127.0.0.1"):
            r.continue_()
        else:
            page.external.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return page


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_offline_without_errors(browser, server, path):
    page = open_page(browser, server + path)
    assert page.errors == []
    assert page.external == [], "the site must read offline"
    links = {a.split("#")[0] for a in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
             if a.startswith(server)}
    for link in links:
        assert page.request.get(link).status == 200, f"broken link {link} on /{path}"
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", PAGES)
def test_screenshots(browser, server, path, scheme):
    ARTIFACTS.mkdir(exist_ok=True)
    page = open_page(browser, server + path, scheme)
    name = (path.strip("/") or "index") + f"-{scheme}.png"
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    assert (ARTIFACTS / name).stat().st_size > 10_000
    page.close()


def test_results_tables_show_numbers_and_provenance(browser, server):
    page = open_page(browser, server + "vec_add/")
    cells = page.locator("table td").all_inner_texts()
    assert any(re.fullmatch(r"[\d,.]+ GB/s", c) for c in cells)
    assert any(re.fullmatch(r"[\d.]+ µs", c) for c in cells)
    assert any(c.startswith("✓") for c in cells)
    assert page.get_by_text("Measured on NVIDIA H100 80GB HBM3").first.is_visible()
    assert page.locator(".nb-problem").count() == 0


def test_plot_renders(browser, server):
    page = open_page(browser, server + "vec_add/")
    plot = page.locator("figure.nb-plot svg").first
    box = plot.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 150
    assert "GB/s" in plot.inner_html()


def test_tabs_switch_between_kernels(browser, server):
    page = open_page(browser, server + "vec_add/")
    float4 = page.locator(".tabbed-block").filter(has_text="vec_add_float4").first
    assert not float4.is_visible()
    page.get_by_text("2_add_float4.cu", exact=True).first.click()
    assert float4.is_visible()


def test_search_finds_an_entry(browser, server):
    page = open_page(browser, server)
    page.keyboard.press("/")  # Material's search hotkey
    page.keyboard.type("bookkeeping")
    result = page.locator(".md-search-result__item").first
    result.wait_for(timeout=10_000)
    assert "3D" in result.inner_text()


def test_math_renders(browser, server):
    page = open_page(browser, server + "softmax/")
    page.locator(".katex").first.wait_for(timeout=10_000)
    assert page.locator(".katex-display").count() >= 1  # the softmax formula, set as display math
    assert page.locator(".katex .mfrac").count() >= 1


def test_dashboard_links_every_entry_and_shows_both_gpus(browser, server):
    page = open_page(browser, server + "dashboard/")
    headers = page.locator("table th").all_inner_texts()
    assert any("H100" in h for h in headers) and any("H200" in h for h in headers)
    for entry in ("vec_add", "vec_add_3d", "softmax"):
        assert page.locator(f"table a[href$='{entry}/']").count() >= 1
    assert page.locator("figure.nb-plot svg").count() == 1
    summary = page.locator("table").last.inner_text()
    assert "fresh" in summary and "clean" in summary


def test_analysis_notebook_ran_and_can_be_downloaded(browser, server):
    page = open_page(browser, server + "analysis/")
    assert page.locator("img").count() >= 1  # the plot the notebook drew when the site was built
    assert "H200/H100" in page.inner_text("body")
    download = page.locator("a[href$='.ipynb']").first
    assert page.request.get(download.evaluate("a => a.href")).status == 200


def test_source_files_that_ran_are_linked(browser, server):
    page = open_page(browser, server + "softmax/")
    link = page.locator("a[href$='7_float4_registers.cu']").first
    body = page.request.get(link.evaluate("a => a.href")).text()
    assert "softmax_float4_registers" in body


def test_code_annotations_open(browser, server):
    page = open_page(browser, server + "softmax/")
    marker = page.locator(".md-annotation__index").first
    marker.wait_for(timeout=10_000)
    marker.click()
    assert "PyCUDA builds against" in page.locator(".md-tooltip--active, .md-annotation__inner").first.inner_text()
