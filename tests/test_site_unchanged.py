"""The built site, file by file, against its snapshot: an engine change that means to change
nothing a reader sees (a move, a rename, a split) must build the very same pages.

The snapshot (``tests/snapshots/site.json``) holds a hash of every file the real notebook builds
to, but the sitemaps, whose only content is the build's date; dates and times of day (the analysis
notebook's execution times, its charts' ``<dc:date>``, inside inline SVG images too) are masked
first, since an engine edit runs the notebook again. Code listings are compared by their text:
Pygments marks the same code up otherwise from one release to the next (``"`` or ``&quot;``, a
keyword or a name), and a clone's Python may hold another release. A page change that is meant
(a new caption, an edited entry) updates it: ``python tests/test_site_unchanged.py``, and the diff
of that file names every built file that changed.
"""

import base64
import hashlib
import html
import json
import re
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).parent / "snapshots" / "site.json"
DATED = ("sitemap.xml", "sitemap.xml.gz")  # the build's date and nothing else


TIMESTAMP = re.compile(rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
SVG_IMAGE = re.compile(rb"(data:image/svg\+xml;base64,)([A-Za-z0-9+/=]+)")
CODE = re.compile(rb"(<pre\b[^>]*>)(.*?)(</pre>)", re.DOTALL)
TAG = re.compile(rb"<[^>]+>")


def code_text(m: re.Match) -> bytes:
    """A highlighted listing as the text it shows, whatever spans the highlighter wrapped it in."""
    return m[1] + html.unescape(TAG.sub(b"", m[2]).decode()).encode() + m[3]


def normalised(data: bytes) -> bytes:
    """``data`` with every timestamp masked, in inline SVG images as well, and code listings as text."""
    data = SVG_IMAGE.sub(lambda m: m[1] + normalised(base64.b64decode(m[2])), data)
    return CODE.sub(code_text, TIMESTAMP.sub(b"<timestamp>", data))


def snapshot(site: Path) -> dict[str, str]:
    """Every built file's path -> the hash of its bytes, timestamps masked and listings as text."""
    return {p.relative_to(site).as_posix(): hashlib.sha256(normalised(p.read_bytes())).hexdigest()[:16]
            for p in sorted(site.rglob("*")) if p.is_file() and p.name not in DATED}


def test_the_real_notebook_builds_the_pages_of_its_snapshot(built_site):
    expected = json.loads(SNAPSHOT.read_text())
    built = snapshot(built_site.site)
    changed = sorted(p for p in expected.keys() & built.keys() if expected[p] != built[p])
    assert (changed, sorted(expected.keys() - built.keys()), sorted(built.keys() - expected.keys())) == ([], [], []), \
        "the built site differs from tests/snapshots/site.json (changed, gone, new); if that is meant, " \
        "run `python tests/test_site_unchanged.py` and commit the snapshot"


def test_a_listing_is_compared_by_its_text_not_its_highlighting():
    one = b'<pre><span class="k">reinterpret_cast</span><span class="s">"C"</span></pre>'
    two = b'<pre><span class="n">reinterpret_cast</span><span class="s">&quot;C&quot;</span></pre>'
    edited = b'<pre><span class="n">static_cast</span><span class="s">&quot;C&quot;</span></pre>'
    assert normalised(one) == normalised(two) != normalised(edited)
    assert normalised(b'<p>"C"</p>') != normalised(b'<p>&quot;C&quot;</p>')  # only listings


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from site_support import build_real_site
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        built = build_real_site(Path(tmp))
        assert built.ok, built.error or built.warnings
        SNAPSHOT.write_text(json.dumps(snapshot(built.site), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
