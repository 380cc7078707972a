"""No comparison typed into a page: every "faster", "behind", "N×" or "within a few percent" in
docs/*.md (front matter included) must come from a macro that reads the results (``compare``,
``best``) or sit inside a claim the build checks (``{% call claim(...) %}``).

Two rules, per clause (sentences split at . ; : ? ! and dashes):
- a typed ratio or share (1.2×, 40%, "three times"), or a typed time or rate (3 µs, 9 GB/s) beside
  a comparative word;
- a word that compares speeds (faster, ahead, beats, as fast as, a few percent, ...) in a clause
  with no ``compare``/``best`` macro to decide its direction. Questions claim nothing.
Quoting someone else's claim is allowed inside ``<q>...</q>``.
"""

from __future__ import annotations

import re

import pytest

from labnotebook.site import frontmatter
from site_support import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md"))
COMPARATIVE = re.compile(
    r"\b(faster|slower|quicker|ahead|behind|beats?|beaten|outperform\w*|match(es|ed)?|within|smallest|largest|"
    r"biggest|best|fastest|slowest|highest|lowest|worst|more|less|fewer|longer|shorter|as long as|as fast as|"
    r"twice|half|dominat\w*|exceed\w*|above|below|near|close to|same|on par|ties?|speed-?ups?|wins?|loses?|"
    r"drops?|falls?|gains?)\b", re.I)
# A typed ratio or share compares by itself; a typed time or rate does beside a comparative word.
# (Dimensions such as 16 × 8 × 8 are neither.)
RATIO = re.compile(r"(?<![\w×^])\d[\d,.]*\s*(×(?!\s*\d)|x\b(?!\s*\d)|%|percent\b|times\b)")
MEASURED = re.compile(r"(?<![\w×^])\d[\d,.]*\s*(µs|ms|s|GB/s|TFLOP/s|GFLOP/s)\b")
SPEED_WORDS = re.compile(
    r"\b(faster|slower|quicker|ahead|behind|beats?|beaten|outperform\w*|narrowly|as fast as|as slow as|"
    r"a few percent|within a few|fastest|slowest|match(es)?|takes? [^.]* as long)\b", re.I)
DECIDING = re.compile(r"⟨(compare|best)⟩")


def prose(markdown: str) -> str:
    """The page's own words: code, math, quotes, claims and link targets removed; each macro call
    replaced by ⟨its name⟩."""
    text = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    text = re.sub(r"^(\s*)```.*?^\1```", "", text, flags=re.S | re.M)  # fenced code, indented or not
    text = re.sub(r"\{%\s*call claim\(.*?\{%\s*endcall\s*%\}", "⟨claim⟩", text, flags=re.S)
    text = re.sub(r"\{\{\s*(\w+)\(.*?\}\}", r"⟨\1⟩", text, flags=re.S)
    text = re.sub(r"<!--.*?-->|<q>.*?</q>", "", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]+`", "", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)  # link text stays, its target goes


def clauses(text: str) -> list[str]:
    parts = re.split(r"(?<=[.;:!?])\s+|\s+[—–]\s+|\n\s*\n|\n\s*[-*] |\n\s*\d+\.\s", text)
    return [re.sub(r"\s+", " ", p).strip() for p in parts if p.strip()]


def typed_comparisons(text: str) -> list[str]:
    found = []
    for clause in clauses(text):
        if clause.endswith("?"):
            continue
        numbered = RATIO.search(clause) or (MEASURED.search(clause) and COMPARATIVE.search(clause))
        undecided = SPEED_WORDS.search(clause) and not DECIDING.search(clause)
        if numbered or undecided:
            found.append(clause)
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_comparison_is_typed_into_a_page(page):
    assert typed_comparisons(prose(page.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_comparison_is_typed_into_front_matter(page):
    meta = frontmatter.read(page, page.name)
    words = " . ".join(str(meta.get(k, "")) for k in ("title", "summary"))
    assert typed_comparisons(words) == []


@pytest.mark.parametrize("sentence", [
    "PyTorch is still, narrowly, ahead.",
    "cublasHgemm takes {{ value(\"m\", \"a\", \"c\") }} as long.",
    "Side by side they agree to within a few percent at every size.",
    "The H200's extra bandwidth, worth 40% on the copy, buys nothing.",
    "It is 1.01× faster than torch.sum.",
    "summary: the kernel is the smallest part, at 3 ms.",
])
def test_the_rules_catch_the_comparisons_issue_12_found(sentence):
    assert typed_comparisons(prose(sentence))


@pytest.mark.parametrize("sentence", [
    "That is {{ compare(\"b\", \"2^28\", \"a\", \"torch\") }}, at {{ value(\"b\", \"a\", \"2^28\") }}.",
    "{% call claim(\"s\", \"a\", \"faster\", \"b\") %}It is faster than PyTorch at 2048 floats and up.{% endcall %}",
    "Is the GPU faster?",
    "It reads 8 bytes and writes 4 for every single addition, with 16 × 8 × 8 threads.",
    "One computed a single row and claimed <q>52× over PyTorch</q>.",
])
def test_the_rules_leave_data_driven_and_non_comparative_prose_alone(sentence):
    assert typed_comparisons(prose(sentence)) == []


# -- counts of what an experiment declares ----------------------------------------------------------

COUNT = re.compile(r"\b(\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                   r"twenty)\s+(?:[\w-]+\s+)?(kernels|rungs|cases|shapes|row lengths|baselines|entries)\b", re.I)


def typed_counts(text: str) -> list[str]:
    """Counts of kernels, rungs, cases and entries typed into prose: they go stale the day one is
    added, so they come from the declaration (``count``)."""
    return [m.group(0) for m in COUNT.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_count_of_kernels_or_cases_is_typed_into_a_page(page):
    meta = frontmatter.read(page, page.name)
    assert typed_counts(prose(page.read_text(encoding="utf-8")) + " " + str(meta.get("summary", ""))) == []


@pytest.mark.parametrize("sentence, found", [
    ("Ten CUDA kernels from one thread per row.", ["Ten CUDA kernels"]),
    ("Nine shapes, all of up to 1024 threads.", ["Nine shapes"]),
    ('{{ count("softmax") }} kernels, and the two rungs that follow.', ["two rungs"]),
    ("the two sizes from the notes", []),
])
def test_the_count_rule(sentence, found):
    assert typed_counts(prose(sentence)) == found
