"""The coverage page in a real browser: the system Chromium driven by Playwright against
``scoi serve``'s app (uvicorn on a free localhost port) over the demo corpus.

Skips, saying why, when Playwright or a Chromium binary is missing (.ci/run installs
both: ``apt-get install chromium``). ``SCOI_CHROMIUM`` names another binary.
``SCOI_UPDATE_SCREENSHOT=1`` writes the README's screenshot, docs/img/coverage-page.png.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.helpers.jobs import demo_pairs, ok_server

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "img" / "coverage-page.png"
SENTENCE = "Une jeune femme lit un livre dans le parc pendant que son chien dort au soleil."


def _chromium() -> str:
    pytest.importorskip("fastapi", reason="scoi[serve] is not installed (pip install -e '.[serve]')")
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed (pip install playwright)")
    for path in (os.environ.get("SCOI_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser")):
        if path and os.access(path, os.X_OK):
            return path
    pytest.skip("no Chromium binary (apt-get install chromium, or set SCOI_CHROMIUM); .ci/run installs it")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def served(job_db):
    """``scoi serve``'s app on a localhost port (a stub model for jobs), its base URL."""
    import uvicorn

    from scoi.service.app import create_app
    from scoi.service.config import ModelConfig, ServeConfig

    with ok_server() as fake:
        config = ServeConfig(url=job_db, models={"stub": ModelConfig("stub", "openai:stub",
                                                                     {"base_url": fake.url, "max_retries": 0})})
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(config, warm=[("fr", "en")]), host="127.0.0.1", port=port,
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 120
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}", job_db
        finally:
            server.should_exit = True
            thread.join(30)


@pytest.fixture()
def page():
    from playwright.sync_api import sync_playwright

    path = _chromium()
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        except Exception as e:  # noqa: BLE001 - a binary that cannot start is a skip reason, shown
            pytest.skip(f"Chromium at {path} does not start: {str(e).splitlines()[0]}")
        pg = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        yield pg
        browser.close()
        assert not errors, errors


def test_select_shows_picks_tree_and_colours(page, served):
    url, _ = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    assert page.input_value("#direction") == "fr-en"
    page.fill("#text", SENTENCE)
    page.fill("#k", "3")
    page.click("#select-btn")
    page.wait_for_selector("#tree svg")
    picks = page.locator("#picks > li")
    assert picks.count() == 3
    assert page.locator("#legend .key").count() == 4  # three picks and "not covered"
    # the tree: one drawn word per spaCy token, arcs coloured by the example covering their term
    tokens = page.locator("#tree .displacy-token")
    assert tokens.count() == len(SENTENCE.replace(".", " .").split())
    arrows = page.eval_on_selector_all("#tree .displacy-arrow", "els => els.map(e => e.style.color)")
    assert len(arrows) >= tokens.count() - 2 and all(arrows), arrows  # one arc per non-root token
    # words: each a chip, coloured by its example or marked uncovered
    words = page.locator("#words .w:not(.punct)")
    assert words.count() == len(SENTENCE.rstrip(".").split())
    marked = page.locator("#words .w.covered, #words .w.uncovered").count()
    assert marked == words.count()
    assert page.locator("#pool tbody tr").count() > 3
    if os.environ.get("SCOI_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.evaluate("document.querySelector('#pool-card').open = true")
        page.screenshot(path=str(SCREENSHOT), full_page=True, clip=None)


def test_translate_with_a_configured_model(page, served):
    url, _ = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    assert page.input_value("#model") == "stub"
    page.fill("#text", SENTENCE)
    page.click("#translate-btn")
    page.wait_for_selector("#translation:not([hidden])")
    assert page.text_content("#translation strong").startswith("ok ")
    assert page.text_content("#translation .meta").startswith("stub · 4 examples · generated in ")


def test_a_sentence_of_the_memory_shows_its_stored_translation(page, served):
    """``reuse`` is on by default: an exact match answers without a selection, and the page
    says where the translation came from (no script error)."""
    url, _ = served
    src = demo_pairs()[0][0]
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.fill("#text", src)
    page.click("#translate-btn")
    page.wait_for_selector("#translation:not([hidden])")
    assert page.text_content("#translation strong") in {en for fr, en in demo_pairs() if fr == src}
    assert page.text_content("#translation .meta") == "stub · reused from the translation memory"


def test_errors_show_in_the_banner(page, served):
    url, _ = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.select_option("#direction", "en-fr")
    page.select_option("#method", "fuzzy")
    page.click("#select-btn")
    page.wait_for_selector("#banner:not([hidden])")
    assert "scoi embed" in page.text_content("#banner")


def test_jobs_view_follows_a_job(page, served):
    from scoi.jobs.worker import Worker, WorkerOptions

    url, db = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.click("button.tab[data-view=jobs]")
    page.fill("#job-sentences", "Un zorglub dort.\nLe train arrive en gare.")
    page.fill("#job-name", "page-job")
    page.select_option("#job-method", "bm25")
    page.click("#job-form button[type=submit]")
    page.wait_for_selector("#job-detail:not([hidden])")
    assert "page-job" in page.text_content("#job-title")
    assert page.locator("#items tbody tr").count() == 2
    with Worker(db, WorkerOptions(burst=True)) as w:
        w.run()
    page.wait_for_selector("#job-state.done", timeout=15000)  # the view polls while the job runs
    outputs = page.locator("#items tbody td.out").all_text_contents()
    assert len(outputs) == 2 and all(o.startswith("ok ") for o in outputs)
    # the Gaps panel ranks what the memory lacks for this job
    page.click("button.tab[data-view=gaps]")
    page.wait_for_selector("#gaps-job option", state="attached")
    page.click("#gaps-form button[type=submit]")
    page.wait_for_selector("#gaps-result:not([hidden])")
    assert page.locator("#gaps-words tbody td").first.text_content() == "zorglub"


LONG_SENTENCE = ("Les représentants gouvernementaux internationaux ont immédiatement recommandé l'harmonisation "
                 "progressive des réglementations environnementales transfrontalières concernant "
                 "l'approvisionnement énergétique durable des collectivités territoriales européennes.")


def test_long_sentence_tree_words_never_overlap(page, served):
    """A sentence of 22+ words with long words: every drawn word keeps its own room (the
    drawing widens and the box scrolls; it is never squeezed until words overlap)."""
    url, _ = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.fill("#text", LONG_SENTENCE)
    page.click("#select-btn")
    page.wait_for_selector("#tree svg")
    boxes = page.eval_on_selector_all(
        "#tree .displacy-word",
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right, e.textContent]; })")
    assert len(boxes) >= 22
    for (l1, r1, w1), (l2, r2, w2) in zip(boxes, boxes[1:]):
        assert r1 < l2, f"{w1!r} ({l1:.0f}-{r1:.0f}) overlaps {w2!r} ({l2:.0f}-{r2:.0f})"
# --------------------------------------------------------------------------- other origins, the API docs
@contextmanager
def _browser_page(*args: str):
    """A Chromium page of its own, launched with extra command-line ``args``."""
    from playwright.sync_api import sync_playwright

    path = _chromium()
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu", *args])
        except Exception as e:  # noqa: BLE001 - a binary that cannot start is a skip reason, shown
            pytest.skip(f"Chromium at {path} does not start: {str(e).splitlines()[0]}")
        try:
            yield browser.new_page()
        finally:
            browser.close()


@contextmanager
def _site(html: str):
    """Another origin: ``html`` at http://localhost:PORT/attack.html (the server is 127.0.0.1:...)."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            data = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}/attack.html"
    finally:
        server.shutdown()
        server.server_close()


def _jobs(url: str) -> list:
    import httpx

    return httpx.get(url + "/api/jobs").json()


def test_a_rebinding_page_can_neither_read_nor_submit(served):
    url, _ = served
    port = url.rsplit(":", 1)[1]
    with _browser_page("--host-resolver-rules=MAP evil.example 127.0.0.1") as pg:
        first = pg.goto(f"http://evil.example:{port}/")
        assert first.status == 421
        got = pg.evaluate("""async () => {
            const corpora = await fetch('/api/corpora');
            const job = await fetch('/api/jobs', {method: 'POST', headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({sentences: ['Le chat dort.'], src: 'fr', tgt: 'en', model: 'stub'})});
            return [corpora.status, (await corpora.text()).includes('pairs'), job.status];
        }""")
    assert got == [421, False, 421]
    assert _jobs(url) == []


def test_another_origin_can_neither_frame_the_page_nor_post_a_job(served):
    url, _ = served
    body = '{"sentences": ["Le chat dort."], "src": "fr", "tgt": "en", "model": "stub", "name": "csrf"}'
    html = f"""<!doctype html><iframe id="f" src="{url}/" width="800" height="600"></iframe>
<script>
window.posted = fetch('{url}/api/jobs', {{method: 'POST', mode: 'no-cors', body: new Blob([{body!r}])}})
  .then(() => 'sent', () => 'failed');
window.formPosted = fetch('{url}/api/jobs', {{method: 'POST', mode: 'no-cors',
  headers: {{'Content-Type': 'text/plain'}}, body: {body!r}}}).then(() => 'sent', () => 'failed');
</script>"""
    with _site(html) as attack, _browser_page() as pg:
        pg.goto(attack)
        pg.wait_for_function("window.posted && window.formPosted")
        pg.evaluate("Promise.all([window.posted, window.formPosted])")
        pg.wait_for_timeout(500)  # the frame's navigation settles (refused)
        framed = [f for f in pg.frames if f != pg.main_frame]
        assert framed and all(f.url != f"{url}/" or not f.query_selector("#text") for f in framed), \
            [f.url for f in framed]
    assert _jobs(url) == []


def test_api_docs_render_offline(served):
    url, _ = served
    with _browser_page() as pg:
        requested: list[str] = []
        errors: list[str] = []
        pg.on("request", lambda r: requested.append(r.url))
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(url + "/docs")
        pg.wait_for_selector(".opblock", timeout=30000)
        paths = pg.eval_on_selector_all(".opblock-summary-path", "els => els.map(e => e.dataset.path || e.textContent)")
        assert {"/api/select", "/api/jobs", "/api/translate", "/api/models"} <= {p.strip() for p in paths}, paths
        assert pg.locator(".swagger-ui .info .title").count() == 1
        assert not pg.locator(".errors-wrapper").count()  # "Unable to render this definition" (OpenAPI 3.1)
        assert not errors, errors
    others = [u for u in requested if not u.startswith(url + "/") and not u.startswith("data:")]
    assert not others, others  # nothing reaches the Internet (no CDN, no validator, no demo spec)


def test_lookup_box_and_match_percent_on_picks(page, served):
    url, _ = served
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    page.fill("#text", "Bonjour, comment allez-vous ce soir ?")
    page.click("#lookup-btn")  # the field empty: the server's default minimum, 70 %
    page.wait_for_selector("#lookup-card:not([hidden])")
    assert page.locator("#lookup tbody tr").count() == 1
    assert page.text_content("#lookup-meta").startswith("1 at 70% or more")
    page.fill("#min-match", "70")
    page.click("#lookup-btn")
    page.wait_for_selector("#lookup-card:not([hidden])")
    rows = page.locator("#lookup tbody tr")
    assert rows.count() == 1  # only the stored "Bonjour, comment allez-vous ?" reaches 70%
    assert rows.first.locator("td").nth(0).text_content() == "71.43%"
    assert rows.first.locator("td").nth(2).text_content() == "Hello, how are you?"
    page.click("#select-btn")  # the same minimum: one example qualifies, the banner says so
    page.wait_for_selector("#picks > li")
    assert page.locator("#picks > li").count() == 1
    assert "71.43% match" in page.locator("#picks > li").first.text_content()
    assert "reach 70% match: 1 example instead of 4" in page.text_content("#banner")


def test_select_with_a_glossary_shows_the_terms_found(page, served):
    from tests.helpers.cli import scoi_cli

    url, db = served
    tbx = ROOT / "tests" / "data" / "glossary" / "board.fr-en.tbx"
    assert scoi_cli(["glossary", "add", str(tbx), "--src", "fr", "--tgt", "en"], db).returncode == 0
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    assert not page.locator("#glossary-box").is_hidden()
    page.fill("#text", "Le conseil d'administration de l'ONU se réunit.")
    page.select_option("#glossary", "board")
    page.click("#select-btn")
    page.wait_for_selector("#glossary-terms .chip")
    chips = page.locator("#glossary-terms .chip").all_inner_texts()
    assert chips == ["conseil d'administration \u2192 board of directors", "ONU \u2192 UN"]
