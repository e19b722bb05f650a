"""Sphinx configuration of the sege_cvx documentation (PyData theme, numpydoc, sphinx-gallery).

Build (what CI runs; warnings are errors)::

    pip install -e ".[docs]"
    sphinx-build -W -b html docs docs/_build/html
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs"))  # gallery_layout, the gallery's checked scraper
os.environ.setdefault("MPLBACKEND", "Agg")  # the gallery draws without a display

import sege_cvx  # noqa: E402

project = "sege_cvx"
author = "the sege_cvx developers"
copyright = "2026, the sege_cvx developers"
release = version = sege_cvx.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]

# API reference: one page per public name, from its NumPy-style docstring.
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# Gallery: every examples/plot_*.py runs when the docs build and its figures are kept.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "show_memory": False,
    # Each figure checked for cut text and covered labels before it is kept.
    "image_scrapers": ("gallery_layout.checked_matplotlib_scraper",),
}

html_theme = "pydata_sphinx_theme"
html_title = f"sege_cvx {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path = []
