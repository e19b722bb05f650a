"""The documentation's pages fit and agree: every line of a literal block of the user guide and
of the gallery's code at most :data:`WIDTH` characters; the landing pages and the command
line's help name both safety models and all six algorithms, in plain text.

The PyData theme's content column holds 82 characters of code at its full width (measured on a
screenshot of the built ``own_policy`` page in a 1,440-pixel window: a code box 720 pixels wide,
8.3 pixels a character); a longer line is cut at the box's edge, behind a scroll bar.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 80
_CODE_DIRECTIVE = re.compile(r"\.\. (code-block|code|sourcecode)::")


def literal_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of the literal blocks of reStructuredText ``text``
    (after a paragraph ending in ``::`` or a code directive; a directive's options skipped),
    each line without its block's indentation."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        code = _CODE_DIRECTIVE.match(stripped)
        if not (code or (stripped.endswith("::") and not stripped.startswith(".."))):
            continue
        indent = len(line) - len(line.lstrip())
        body = []
        j = i + 1
        while j < len(lines) and code and lines[j].strip().startswith(":"):
            j += 1  # the directive's options
        while j < len(lines) and (not lines[j].strip()
                                  or len(lines[j]) - len(lines[j].lstrip()) > indent):
            body.append((j + 1, lines[j]))
            j += 1
        filled = [text for _, text in body if text.strip()]
        if not filled:
            continue
        base = min(len(text) - len(text.lstrip()) for text in filled)
        found += [(n, text[base:]) for n, text in body if text.strip()]
    return found


def gallery_code(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of a sphinx-gallery script's code: not its docstring, and not the
    comment lines after a ``# %%`` marker, which the gallery renders as text."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines[1:], 1) if line.strip().endswith('"""')) + 1
    found, prose = [], False
    for i in range(start, len(lines)):
        line = lines[i]
        if line.startswith("# %%"):
            prose = True
            continue
        prose = prose and line.startswith("#")
        if not prose:
            found.append((i + 1, line))
    return found


PAGES = sorted([*ROOT.glob("docs/*.rst"), *ROOT.glob("docs/user_guide/*.rst")])
EXAMPLES = sorted(ROOT.glob("examples/plot_*.py"))


def test_the_readers_find_what_they_check():
    block = literal_blocks("Text::\n\n    short\n        deeper\n\n.. code-block:: python\n"
                           "   :caption: c\n\n   x = 1\n\nafter\n")
    assert block == [(3, "short"), (4, "    deeper"), (9, "x = 1")]
    script = '"""\nTitle\n=====\n"""\n\nimport numpy\n# %%\n# Prose.\n\nx = 1  # code\n# note\n'
    assert gallery_code(script) == [(5, ""), (6, "import numpy"), (9, ""), (10, "x = 1  # code"),
                                    (11, "# note")]
    assert len(PAGES) >= 10 and len(EXAMPLES) >= 9


@pytest.mark.parametrize("path", PAGES + EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_lines_fit_the_content_column(path):
    text = path.read_text()
    lines = gallery_code(text) if path.suffix == ".py" else literal_blocks(text)
    long = [f"{path.name}:{n}: {len(line)} characters" for n, line in lines if len(line) > WIDTH]
    assert not long, "\n".join(long)


ALGORITHMS = ("SEGE", "CLUCB", "ROFUL", "GNOP", "SafeTS", "Safe-LUCB")


@pytest.mark.parametrize("page", ["README.md", "docs/index.rst", "docs/user_guide/index.rst"])
def test_the_landing_pages_name_both_models_and_every_algorithm(page):
    text = " ".join((ROOT / page).read_text().split())
    assert "stagewise reward floor" in text and "unknown linear constraint" in text
    assert [name for name in ALGORITHMS if name not in text] == []


def test_the_command_line_s_help_names_them_in_plain_text(capsys):
    from sege_cvx.cli import main

    for command in ([], ["demo"], ["reproduce"], ["run"], ["sweep"], ["report"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        assert "``" not in text and not re.search(r":[a-z]+:`", text), command
        if not command:
            assert [name for name in ALGORITHMS if name not in text] == []
            assert "stagewise reward floor" in " ".join(text.split())
