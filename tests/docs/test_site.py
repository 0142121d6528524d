"""The documentation site builds with ``mkdocs build --strict`` (no broken link or anchor, no
page left out of the navigation, every generated reference page made) and the built site
needs nothing from another host: no CDN script, stylesheet, font or image (issue 32)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .snippets import ROOT

README = ROOT / "README.md"
#: A README longer than this is turning back into the manual; the manual is docs/.
README_MAX_LINES = 200

#: Attributes through which a page makes the browser fetch something by itself.
_FETCHING = {
    ("script", "src"),
    ("link", "href"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
    ("object", "data"),
}
#: ``<link rel=...>`` values that only name a page (no fetch).
_LINK_NAMES = {"canonical", "alternate", "next", "prev", "author", "license", "help"}


class _Fetches(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.mermaid = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and set((a.get("rel") or "").split()) <= _LINK_NAMES and a.get("rel"):
            return
        for t, attr in _FETCHING:
            if t == tag and a.get(attr):
                self.urls.append(a[attr] or "")
        if "srcset" in a:
            self.urls += [part.split()[0] for part in (a["srcset"] or "").split(",") if part]
        if "style" in a:
            self.urls += _css_urls(a["style"] or "")
        # Material loads mermaid.js from a CDN when a page has a mermaid diagram.
        if "mermaid" in (a.get("class") or "").split():
            self.mermaid = True

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.urls += _css_urls(data)


def _css_urls(css: str) -> list[str]:
    found = re.findall(r"""url\(\s*['"]?([^'")\s]+)""", css)
    found += re.findall(r"""@import\s+['"]([^'"]+)""", css)
    return found


def external(url: str) -> bool:
    """A URL the browser would fetch from another host (``//host/x`` included)."""
    parsed = urlparse(url.strip())
    return bool(parsed.netloc) or parsed.scheme not in ("", "data", "blob")


def external_fetches(site: Path) -> list[str]:
    """``file: url`` for every fetch of a built page or stylesheet that leaves the site, and
    every page that would make Material fetch mermaid.js from its CDN."""
    bad: list[str] = []
    for page in sorted(site.rglob("*.html")):
        parser = _Fetches()
        parser.feed(page.read_text(errors="replace"))
        bad += [f"{page.relative_to(site)}: {u}" for u in parser.urls if external(u)]
        if parser.mermaid:
            bad.append(f"{page.relative_to(site)}: a mermaid diagram (loaded from a CDN)")
    for sheet in sorted(site.rglob("*.css")):
        text = re.sub(r"/\*.*?\*/", "", sheet.read_text(errors="replace"), flags=re.DOTALL)
        bad += [f"{sheet.relative_to(site)}: {u}" for u in _css_urls(text) if external(u)]
    return bad


def _mkdocs_env() -> dict[str, str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    for package in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(package, reason=f"{package} not installed (the docs extra)")
    out = tmp_path_factory.mktemp("site")
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml")]
    done = subprocess.run(
        [*argv, "-d", str(out)],
        cwd=ROOT,
        env=_mkdocs_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    yield out


#: Both tests share one build: with xdist they go to the same worker (``--dist loadgroup``).
_ONE_BUILD = pytest.mark.xdist_group("docs-site")


@pytest.mark.slow
@_ONE_BUILD
def test_the_site_builds_strict_with_every_reference_page(site: Path) -> None:
    for page in ("index", "getting-started", "reference/python", "explanations/performance"):
        assert (site / f"{page}.html").is_file(), page
    cli = (site / "reference/cli.html").read_text()
    assert "assay serve" in cli and "assay records show" in cli
    http = (site / "reference/http.html").read_text()
    assert "/run_code" in http and "/v1/sessions/{session_id}/exec" in http
    metrics = (site / "reference/metrics.html").read_text()
    assert "assay_jobs_completed_total" in metrics and "AssayDown" in metrics
    python = (site / "reference/python.html").read_text()
    assert 'id="assay.run"' in python and 'id="assay.integrations.verl.compute_score"' in python


@pytest.mark.slow
@_ONE_BUILD
def test_the_built_site_needs_no_cdn(site: Path) -> None:
    assert external_fetches(site) == []


def test_the_cdn_check_catches_external_fetches(tmp_path: Path) -> None:
    """The check itself: each way a page can pull from another host is caught; links a
    reader clicks, and the page's own assets, are not."""
    (tmp_path / "a.html").write_text(
        '<script src="https://cdn.example.org/x.js"></script>'
        '<link rel="stylesheet" href="//fonts.example.com/css">'
        '<img src="http://img.example.net/a.png">'
        '<style>@font-face { src: url("https://fonts.gstatic.com/s/a.woff2") }</style>'
        '<pre class="mermaid">graph LR</pre>'
        '<a href="https://github.com/x">a link</a><script src="assets/local.js"></script>'
        '<link rel="canonical" href="https://docs.example.org/a.html">'
    )
    (tmp_path / "b.css").write_text("/* url(https://in.comment) */ @import 'https://x.org/y.css';")
    bad = external_fetches(tmp_path)
    assert len(bad) == 6, bad
    assert not any("github.com" in b or "local.js" in b or "in.comment" in b for b in bad)


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not urlparse(t).scheme]
    assert any(t.startswith("docs/") for t in local)
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == []


def test_the_readme_keeps_the_two_commands() -> None:
    text = README.read_text()
    assert "make demo   # installs the runtime only" in text
    assert "make test   # installs the rest" in text
