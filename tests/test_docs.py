"""The README and the documentation site as a user meets them: the site builds in strict mode and
renders in a browser, every command has its reference page, the README's links lead somewhere, and
every example marked runnable still runs and prints what its page shows (tests/doc_examples.py)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_examples import Block, blocks, output_differs, regenerated
from longhaul.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


# ---------------------------------------------------------------- the README


def test_readme_is_short_and_starts_with_the_two_commands():
    lines = README.read_text().splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    code = [ln for ln in lines[:8] if ln.startswith("./scripts/")]
    assert [c.split()[0] for c in code] == ["./scripts/study.sh", "./scripts/test.sh"], lines[:8]


@pytest.mark.parametrize("page", [README, *sorted(DOCS.rglob("*.md"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files(page):
    """The strict build checks the site's own links; this checks the README's (GitHub renders it, Sphinx
    does not) and every page's links out of docs/ into the repository."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"


# ---------------------------------------------------------------- one page per command


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path)
    for action in subs:
        seen = set()
        for name, sub in action.choices.items():
            if id(sub) not in seen:  # an alias (analyze) is the same parser
                seen.add(id(sub))
                yield from _leaves(sub, (*path, name))


def test_every_command_has_a_reference_page():
    documented = set()
    for page in (DOCS / "reference" / "cli").glob("*.md"):
        documented |= set(re.findall(r"^:path: (.+)$", page.read_text(), flags=re.M))
    missing = [leaf for leaf in _leaves(build_parser())
               if not any(leaf == d or leaf.startswith(d + " ") for d in documented)]
    assert not missing, f"commands without a page in docs/reference/cli/ (an argparse directive): {missing}"


CHECK_NAMES = """
import importlib, json, sys
for modules, entry in json.load(sys.stdin):
    mods = [importlib.import_module(m) for m in modules]
    head, _, attr = entry.partition(".")
    owner = next((getattr(m, head) for m in mods if hasattr(m, head)), None)
    if owner is None or (attr and not hasattr(owner, attr)):
        print(entry, "is not in", modules)
"""


def test_the_python_api_page_names_what_exists():
    """Every entry point docs/reference/python-api.md names is an attribute of the module its row names (checked
    in a child: importing longhaul.mpi starts MPI, which the test process must not)."""
    rows = [r for r in (DOCS / "reference" / "python-api.md").read_text().splitlines() if r.startswith("| `longhaul")]
    assert len(rows) >= 10
    pairs = []
    for row in rows:
        modules_cell, entries_cell = row.split("|")[1:3]
        modules = re.findall(r"`(longhaul[\w.]*)`", modules_cell)
        pairs += [(modules, e) for e in re.findall(r"`([A-Za-z_]\w*(?:\.\w+)?)", entries_cell)]
    proc = subprocess.run([sys.executable, "-c", CHECK_NAMES], input=json.dumps(pairs), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and not proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------- the site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "longhaul.cli", "docs", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"the strict docs build failed:\n{proc.stderr}"
    assert proc.stdout.strip() == str(out.resolve() / "index.html")
    return out


@pytest.mark.xdist_group("docs-site")
def test_the_site_builds_strict_with_every_section(site):
    index = (site / "index.html").read_text()
    for caption in ("Tutorials", "How-to guides", "Reference", "Models", "Explanation"):
        assert caption in index
    # The options come from the parser: an option of sim verbs, its help text and its choices.
    verbs = (site / "reference" / "cli" / "sim-verbs.html").read_text()
    assert "--distance-km" in verbs and "longbow-xr" in verbs


def _dom(url: str, tmp_path: Path) -> str:
    profile = tmp_path / f"chromium-{len(list(tmp_path.iterdir()))}"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.xdist_group("docs-site")
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="Debian's chromium is not installed")
def test_the_site_renders_in_chromium(site, tmp_path):
    dom = _dom((site / "reference" / "cli" / "sim-verbs.html").as_uri(), tmp_path)
    # The theme's navigation and the generated options are in the rendered page.
    assert 'class="sidebar-tree"' in dom and "longhaul sim verbs" in dom and "--distance-km" in dom
    # Search runs in the page's scripts: results appear only if they loaded and ran.
    dom = _dom((site / "search.html").as_uri() + "?q=extender", tmp_path)
    hits = re.findall(r'<li[^>]*>\s*<a[^>]+href="[^"]+\.html', dom)
    assert len(hits) >= 3, dom[-3000:]


# ---------------------------------------------------------------- runnable examples


def _runnable(emu: bool) -> list[tuple[Path, list[Block]]]:
    found = []
    for page in PAGES:
        mine = [b for b in blocks(page) if ("emu" in b.options) == emu]
        if mine:
            found.append((page, mine))
    return found


def _run_page(page: Path, page_blocks: list[Block], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LONGHAUL_STORE"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(ROOT / "target" / "release"), env["PATH"]])
    # A fresh directory (stores and reports land there), with the checkout's example files as a user has them.
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    regen = os.environ.get("LONGHAUL_REGEN_DOCS") == "1"
    lines = page.read_text().splitlines()
    edits = []
    for block in page_blocks:
        for cmd in block.commands:
            text = cmd.text.removeprefix("sudo ") if os.geteuid() == 0 else cmd.text
            proc = subprocess.run(["bash", "-c", text], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=600)
            where = f"{page.relative_to(ROOT)}:{cmd.first_output_line}: $ {cmd.text}"
            assert proc.returncode == 0, f"{where}\nexit status {proc.returncode}:\n{proc.stdout[-3000:]}"
            actual = proc.stdout.splitlines()
            if regen:
                edits.append((cmd.first_output_line, len(cmd.shown), regenerated(cmd.shown, actual)))
                continue
            why = output_differs(cmd.shown, actual)
            assert why is None, f"{where}\n{why}\n(LONGHAUL_REGEN_DOCS=1 rewrites the page from real output)"
    for start, count, new in sorted(edits, reverse=True):
        lines[start:start + count] = new
    if edits:
        page.write_text("\n".join(lines) + "\n")


NON_EMU = _runnable(emu=False)
EMU = _runnable(emu=True)


@pytest.mark.parametrize("page,page_blocks", NON_EMU, ids=[str(p.relative_to(ROOT)) for p, _ in NON_EMU])
def test_runnable_examples(page, page_blocks, tmp_path):
    _run_page(page, page_blocks, tmp_path)


@pytest.mark.emu
@pytest.mark.root
@pytest.mark.parametrize("page,page_blocks", EMU, ids=[str(p.relative_to(ROOT)) for p, _ in EMU])
def test_runnable_emulator_examples(page, page_blocks, tmp_path):
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        pytest.skip("the emulator needs root and /dev/net/tun")
    _run_page(page, page_blocks, tmp_path)


# ---------------------------------------------------------------- the matching itself

SHOWN = ["            title (ndr)", "┃ size_bytes ┃ bw_MBps ┃ status ┃", "│      65536 │   409.2 │     ok │",
         "│    1048576 │    6458 │     ok │"]


@pytest.mark.parametrize("actual, verdict", [
    (SHOWN, None),
    # a model change of tens of percent, and a table redrawn wider: the same in substance
    (["   title (ndr)   ", "┃  size_bytes ┃  bw_MBps ┃ status ┃", "│ 65536 │ 300.1 │ ok │", "│ 1048576 │ 8001 │ ok │"],
     None),
    (["title (ndr)", "┃ size_bytes ┃ bw_MBps ┃ status ┃", "│ 65536 │ 40.9 │ ok │", "│ 1048576 │ 6458 │ ok │"],
     "40.9 is not within a factor of two of 409.2"),
    (["title (ndr)", "┃ size_bytes ┃ bw_MBps ┃ rx_bw_MBps ┃ status ┃", "│ 65536 │ 409 │ 409 │ ok │",
      "│ 1048576 │ 6458 │ 6458 │ ok │"], "the words or the columns differ"),
    (["title (ndr)", "┃ size_bytes ┃ bw_MBps ┃ status ┃", "│ 65536 │ │ ok │", "│ 1048576 │ 6458 │ ok │"],
     "the words or the columns differ"),
    (SHOWN[:3], "the output has 3 lines, the page shows 4"),
])
def test_output_is_matched_in_substance(actual, verdict):
    why = output_differs(SHOWN, actual)
    assert (why is None) if verdict is None else (verdict in why), why


def test_an_ellipsis_stands_for_lines_and_for_text():
    shown = ["# study (..., 5.3 s)", "- verbs: ok — 8 computed", "..."]
    assert output_differs(shown, ["# study (2026-11-27T19:11:24+00:00, 6.1 s)", "- verbs: ok — 8 computed", "a", "b"]) \
        is None
    assert output_differs(shown, ["# study (2026-11-27, 6.1 s)", "- verbs: failed — 8 computed"]) is not None


def test_a_number_with_thousands_separators_is_one_number():
    assert output_differs(["peak 1,266 MB/s"], ["peak 980 MB/s"]) is None
    assert "not within a factor of two" in output_differs(["peak 1,266 MB/s"], ["peak 12,660 MB/s"])
    assert output_differs(["a,5,2026-11-27"], ["a,5,2027-01-02"]) is not None  # csv fields stay apart
