"""The built notebook in a real browser (Playwright driving Debian's Chromium, headless), served
under a sub-path as when published, with every request that would leave the machine refused.

A phone (390 px, light) and a desktop (1400 px, dark), one tab each, reused page after page.
Skipped where Chromium or Playwright is missing, unless NOTEBOOK_REQUIRE_BROWSER=1 (as in
.ci/run), where a missing browser is a failure. Screenshots land in test-artifacts/."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import threading
import urllib.error
import urllib.request

import pytest

from site_support import ROOT, SUBPATH

pytestmark = pytest.mark.browser
ARTIFACTS = ROOT / "test-artifacts"
ENTRIES = [line.strip()[2:-3] + "/" for line in (ROOT / "mkdocs.yml").read_text().split("- Entries:")[1].splitlines()
           if line.strip().startswith("- ")]
PAGES = ["", "dashboard/", "analysis/", "authoring/", *ENTRIES]
# Every host name resolves to nothing: a request that would leave the machine fails (and Tab
# records it), with no request held on its way for Python to judge, which turns the browser's
# cache off (Playwright's routing does) and costs a quarter of each page's load.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
SCREENSHOTS = {"softmax/": "figure.nb-plot", "dashboard/": ".nb-dashboard", "vec_add/": "table"}
LEGIBLE_PX = 10.5  # "about 11 px": no chart text smaller than this on any screen

# The smallest rendered font size of any chart's text, in CSS pixels: inline SVG text by its
# font size times the SVG's scale; the notebook's SVG images by their scale against 10 pt text.
SMALLEST_CHART_TEXT = """() => {
  const sizes = [];
  for (const svg of document.querySelectorAll("figure.nb-plot svg")) {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll("text")) sizes.push(parseFloat(getComputedStyle(t).fontSize) * scale);
  }
  for (const img of document.querySelectorAll('[data-mime-type="image/svg+xml"] img')) {
    sizes.push(10 * 4 / 3 * img.getBoundingClientRect().width / img.naturalWidth);
  }
  return sizes.length ? Math.min(...sizes) : null;
}"""

# The charts and images that stick out of the article's box, the text column: none should.
CHARTS_OUT_OF_COLUMN = """() => {
  const article = document.querySelector("article");
  const column = article.getBoundingClientRect();
  return [...article.querySelectorAll("svg, img")]
    .map(el => el.getBoundingClientRect())
    .filter(r => r.width > 0 && (r.left < column.left - 0.5 || r.right > column.right + 0.5))
    .map(r => `${Math.round(r.width)} px at ${Math.round(r.left)}-${Math.round(r.right)}`
              + ` in a column at ${Math.round(column.left)}-${Math.round(column.right)}`);
}"""


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


class SubPathHandler(http.server.SimpleHTTPRequestHandler):
    """The site under SUBPATH, and its 404 page for anything missing, as a static host serves it;
    given a ``search_index``, that in place of the site's."""

    def __init__(self, *args, site, search_index: bytes | None = None, **kwargs):
        self.site, self.search_index = site, search_index
        super().__init__(*args, directory=str(site), **kwargs)

    def do_GET(self):
        if self.search_index is None or self.path.split("?")[0] != f"{SUBPATH}search/search_index.json":
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.search_index)))
        self.end_headers()
        self.wfile.write(self.search_index)

    def translate_path(self, path):
        path = path.split("?")[0].split("#")[0]
        return super().translate_path("/" + path[len(SUBPATH):] if path.startswith(SUBPATH) else "/missing/")

    def send_error(self, code, message=None, explain=None):
        if code != 404:
            return super().send_error(code, message, explain)
        body = (self.site / "404.html").read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a page closed while a file was still being sent: not the site's problem


@contextlib.contextmanager
def serving(site, search_index: bytes | None = None):
    """The site served under SUBPATH on a port of its own, while in the block: its URL."""
    httpd = QuietServer(("127.0.0.1", 0), functools.partial(SubPathHandler, site=site, search_index=search_index))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{SUBPATH}"
    finally:
        httpd.shutdown()


@pytest.fixture(scope="module")
def server(built_site):
    with serving(built_site.site) as url:
        yield url


def empty_search_index(site) -> bytes:
    """The site's search index with no pages in it: its settings as built, nothing to index."""
    config = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["config"]
    return json.dumps({"config": config, "docs": []}).encode()


class Tab:
    """One browser tab, reused page after page (a new tab per page costs twice as long), that
    records console errors and every request that would leave this machine (which fails:
    CHROMIUM_FLAGS)."""

    def __init__(self, browser, server, width, scheme):
        self.server, self.width, self.scheme = server, width, scheme
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        self.errors, self.external = [], []
        self.context.on("request", self._seen)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _seen(self, request) -> None:
        """A request for anything but this server's files (data: and blob: URLs stay in the page)."""
        if request.url.startswith(("http", "ws")) and not request.url.startswith(self.server.split(SUBPATH)[0]):
            self.external.append(request.url)

    def open(self, path: str):
        self.errors.clear()
        self.page.goto(self.server + path, wait_until="load")
        return self.page

    def screenshot(self, path: str, where: str) -> None:
        """What a reader sees of ``where`` on this page, for people to look at: test-artifacts/."""
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.locator(where).first.scroll_into_view_if_needed()
        name = ARTIFACTS / f"{path.strip('/')}-{self.width}-{self.scheme}.png"
        self.page.screenshot(path=str(name))
        assert name.stat().st_size > 10_000


@pytest.fixture(scope="module")
def phone(browser, built_site):
    """The phone's tab never searches (the desktop's does: test_softmax_on_a_desktop). Material's
    search worker indexes the whole site after every page's load, a quarter of the browser's CPU
    for each page; here, served by a server of its own, it starts as on the site, with the site's
    settings, and has nothing to index."""
    with serving(built_site.site, search_index=empty_search_index(built_site.site)) as url:
        tab = Tab(browser, url, 390, "light")
        yield tab
        tab.context.close()


@pytest.fixture(scope="module")
def desktop(browser, server):
    tab = Tab(browser, server, 1400, "dark")
    yield tab
    tab.context.close()


@pytest.fixture(scope="module")
def links():
    return set()


@pytest.mark.parametrize("path", PAGES)
def test_page_reads_on_a_phone_offline_without_errors_or_overflow(phone, links, path):
    page = phone.open(path)
    assert phone.errors == [] and phone.external == [], "the site must read offline, without errors"
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= phone.width, f"/{path} is {width} px wide on a {phone.width} px screen: it scrolls sideways"
    assert page.evaluate(CHARTS_OUT_OF_COLUMN) == [], f"a chart on /{path} does not fit its column"
    smallest = page.evaluate(SMALLEST_CHART_TEXT)
    assert smallest is None or smallest >= LEGIBLE_PX, f"chart text of {smallest:.1f} px on /{path}"
    links.update(a.split("#")[0] for a in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
                 if a.startswith(phone.server))
    if path in SCREENSHOTS:
        phone.screenshot(path, SCREENSHOTS[path])


def test_every_link_on_the_site_resolves(phone, links):
    assert len(links) > len(PAGES)
    for link in sorted(links):
        try:
            assert urllib.request.urlopen(link).status == 200
        except urllib.error.HTTPError as e:
            pytest.fail(f"broken link {link}: {e.code}")


@pytest.mark.parametrize("path", ["vec_add/", "dashboard/"])
def test_results_tables_scroll_inside_their_frame_with_the_first_column_pinned(phone, path):
    page = phone.open(path)
    page.locator(".md-typeset__scrollwrap").first.evaluate("el => el.scrollLeft = 300")
    first = page.locator(".md-typeset__table table td:first-child").first
    assert first.evaluate("el => getComputedStyle(el).position") == "sticky"
    assert 0 <= first.bounding_box()["x"] < 40  # still in view after scrolling the table sideways


def test_softmax_on_a_desktop(desktop):
    """The longest page: its wide checks table fits, its math renders, its claims show their
    figures, its code annotations open, its source files are linked, and search sets math."""
    page = desktop.open("softmax/")
    checks = page.locator(".nb-checks .md-typeset__scrollwrap").first
    assert checks.evaluate("el => el.scrollWidth <= el.clientWidth"), "the checks table is cut off"
    assert page.locator(".katex-display .mfrac").count() >= 1  # the softmax formula, as display math
    assert "2²⁸" in page.locator(".md-nav").first.inner_text()  # titles: powers as superscripts
    assert re.search(r"Checked against the results\b.*: .* µs", page.locator(".nb-claim").first.get_attribute("title"))
    href = page.locator("a[href$='7_float4_registers.cu']").first.evaluate("a => a.href")
    assert b"softmax_float4_registers" in urllib.request.urlopen(href).read()
    page.locator(".md-annotation__index").first.click()
    assert "PyCUDA builds against" in page.locator(".md-tooltip--active, .md-annotation__inner").first.inner_text()
    page.keyboard.press("Escape")
    desktop.screenshot("softmax/", ".nb-checks")
    page.keyboard.press("/")  # Material's search hotkey
    page.keyboard.type("grid of 16")
    page.locator(".md-search-result__item").first.wait_for(timeout=10_000)
    assert page.locator(".md-search-result .katex").count() >= 1  # math in the results is set too
    assert desktop.errors == []


def test_the_matmul_checks_table_fits_on_a_desktop(desktop):
    page = desktop.open("matmul/")
    checks = page.locator(".nb-checks .md-typeset__scrollwrap").first
    assert checks.evaluate("el => el.scrollWidth <= el.clientWidth"), "the checks table is cut off"


def test_dashboard_covers_every_entry_on_both_gpus(desktop):
    page = desktop.open("dashboard/")
    headers = page.locator("table th").all_inner_texts()
    assert any("H100" in h for h in headers) and any("H200" in h for h in headers)
    for entry in ENTRIES:
        if entry not in ("gpu/", "time_breakdown/", "cublas/", "triton/"):  # pages without an experiment
            assert page.locator(f"table a[href$='{entry}']").count() >= 1, entry
    desktop.screenshot("dashboard/", ".nb-dashboard")
    frame = page.locator(".nb-dashboard .md-typeset__scrollwrap").first
    assert frame.evaluate("el => el.scrollWidth <= el.clientWidth"), "the dashboard is cut off at 1400 px"
    names = page.locator(".nb-dashboard td code")
    assert all(n.bounding_box()["height"] < 30 for n in names.all()[:20]), "a name broke across lines"
    tables = page.locator("table").all_inner_texts()
    assert any("commit" in t and "refresh" in t for t in tables)  # the execution summary
    cost = [t for t in tables if "wall s" in t]  # what a refresh costs: one table per GPU, summed
    assert len(cost) == 2 and all("sum" in t and "sanitizer" in t and "profile" in t for t in cost)


def test_tabs_switch_between_kernels(desktop):
    page = desktop.open("vec_add/")
    float4 = page.locator(".tabbed-block").filter(has_text="vec_add_float4").first
    assert not float4.is_visible()
    page.get_by_text("2_add_float4.cu", exact=True).first.click()
    assert float4.is_visible()


def test_the_404_page_is_styled_under_the_sub_path(desktop):
    page = desktop.open("no/such/page/")
    assert page.locator(".md-header").is_visible() and "404" in page.inner_text("article")
    assert page.evaluate("getComputedStyle(document.querySelector('.md-header')).position") != "static"


def test_the_analysis_notebook_ran_and_can_be_downloaded(desktop):
    page = desktop.open("analysis/")
    assert page.locator('[data-mime-type="image/svg+xml"] img').count() >= 1
    assert "H200 - H100" in page.inner_text("article")
    href = page.locator("a[href$='.ipynb']").first.evaluate("a => a.href")
    assert b'"outputs"' in urllib.request.urlopen(href).read()
