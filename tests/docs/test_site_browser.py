"""Opens the built documentation in headless Chromium, as a reader would.

Loads the index, the `fluxion.numpy` API page and the porting guide (failing on a console error, a failed request
or an image that did not load), types `grad` in the search box and follows the result to `fluxion.grad`, and
checks every internal link and image of every page of the site (the file exists, and so does the `#anchor`).
Screenshots of the visited pages are saved in `docs/_build/screenshots/`.

The site is the one in `docs/_build/html` when it is newer than every source of the docs, else it is built first
(`python -m sphinx -W -b html docs docs/_build/html`). Skips when Playwright, Chromium or Sphinx is missing.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HTML = DOCS / "_build" / "html"
SHOTS = DOCS / "_build" / "screenshots"
CHROMIUM = os.environ.get("FLUXION_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _sources() -> list[Path]:
    out = [p for p in DOCS.rglob("*") if p.is_file() and "_build" not in p.parts and "_generated" not in p.parts
           and p.parent.name != "api"]
    return out + [ROOT / "README.md"] + list((ROOT / "fluxion").rglob("*.py"))


def _fresh() -> bool:
    index = HTML / "index.html"
    return index.exists() and index.stat().st_mtime >= max(p.stat().st_mtime for p in _sources())


def _site() -> Path:
    if _fresh():
        return HTML
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("furo")
    HTML.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time: test workers running in parallel wait for the first one's build and then reuse it.
    with open(HTML.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _fresh():
            subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "-q", "-b", "html", str(DOCS), str(HTML)],
                           check=True, cwd=ROOT)
    return HTML


class _Refs(HTMLParser):
    """Collects the ids, link targets and image sources of one page."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])


def _parse(path: Path) -> _Refs:
    refs = _Refs()
    refs.feed(path.read_text(errors="replace"))
    return refs


def _internal(url: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", url) and not url.startswith("//")


def test_every_internal_link_and_image_resolves():
    site = _site()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30, f"only {len(pages)} pages in {site}"
    parsed = {p: _parse(p) for p in pages}
    broken = []
    for page, refs in parsed.items():
        for url in refs.links + refs.images:
            if not _internal(url):
                continue
            target, _, fragment = urllib.parse.unquote(url).partition("#")
            dest = (page.parent / target).resolve() if target else page
            if dest.is_dir():
                dest = dest / "index.html"
            if not dest.exists():
                broken.append(f"{page.relative_to(site)}: {url} (no such file)")
            elif fragment and dest.suffix == ".html":
                ids = parsed[dest].ids if dest in parsed else _parse(dest).ids
                if fragment not in ids:
                    broken.append(f"{page.relative_to(site)}: {url} (no such anchor)")
    assert not broken, f"{len(broken)} broken internal links or images:\n" + "\n".join(broken[:40])


@pytest.fixture(scope="module")
def server():
    site = _site()
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser cancelled a request (see _Watch._request_failed)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class _Watch:
    """Console errors, uncaught exceptions and failed requests of one page."""

    def __init__(self, page, base: str):
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", self._request_failed)
        self.base = base
        page.on("response", lambda r: self.problems.append(f"HTTP {r.status}: {r.url}")
                if r.url.startswith(base) and r.status >= 400 else None)

    def _request_failed(self, request):
        # The search page fetches result pages for their summaries; leaving the page cancels the ones still in
        # flight (net::ERR_ABORTED), which is not a missing resource.
        if request.url.startswith(self.base) and "ERR_ABORTED" not in (request.failure or ""):
            self.problems.append(f"request failed: {request.url} ({request.failure})")

    def _console(self, message):
        # Chromium asks every site for /favicon.ico on its own; the site has none, and that 404 is not the page's.
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            self.problems.append(f"console {message.type}: {message.text} ({message.location.get('url')})")


def _open(browser, base: str, path: str, shot: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    # The fluxion.numpy reference is one page of ~1.2 MB (every function with its examples): on a loaded 2-core CI
    # machine its layout alone can take longer than Playwright's 30 s default.
    page.set_default_timeout(180_000)
    watch = _Watch(page, base)
    response = page.goto(f"{base}/{path}", wait_until="load")
    assert response is not None and response.ok, f"{path}: {response and response.status}"
    # Not "networkidle": on the 1.2 MB API page that state sometimes never arrives although no request of the page
    # is pending (about one run in two, here and in CI; the browser's own favicon request is the likely holder).
    # The load event already covers the page's stylesheets, scripts and images; wait for the images explicitly in
    # case a script added any after it.
    page.wait_for_function("Array.from(document.images).every(i => i.complete)")
    broken_images = page.evaluate(
        "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
    assert not broken_images, f"{path}: images that did not load: {broken_images}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / shot), full_page=False)
    return page, watch


@pytest.mark.parametrize("path,shot,must_show", [
    ("index.html", "index.png", "fluxion is the JAX ecosystem"),
    ("api/fluxion.numpy.html", "api_numpy.png", "fluxion.numpy"),
    ("porting.html", "porting.png", "python -m fluxion.run"),
])
def test_pages_load_cleanly(browser, server, path, shot, must_show):
    page, watch = _open(browser, server, path, shot)
    text = page.inner_text("body")
    assert must_show in text, f"{path}: {must_show!r} not on the page"
    assert page.title(), f"{path}: no title"
    assert not watch.problems, f"{path}: " + "; ".join(watch.problems)
    page.close()


def test_search_finds_grad(browser, server):
    page, watch = _open(browser, server, "index.html", "search_start.png")
    box = page.locator("input[name='q']").first
    box.fill("grad")
    box.press("Enter")
    page.wait_for_url(re.compile(r"search\.html\?q=grad"))
    # Sphinx's search script fills the result list once it has loaded the index.
    result = page.locator("#search-results li a", has_text=re.compile(r"^fluxion\.grad$"))
    result.first.wait_for(timeout=30_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "search_results.png"))
    result.first.click()
    page.wait_for_load_state("load")
    assert "api/fluxion.html" in page.url and page.url.endswith("#fluxion.grad"), page.url
    target = page.locator("[id='fluxion.grad']")
    assert target.count() == 1
    target.scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # let the theme's scroll settle before the screenshot
    page.screenshot(path=str(SHOTS / "search_target.png"))
    assert not watch.problems, "; ".join(watch.problems)
    page.close()
