"""Sphinx configuration of fluxion's documentation (build: `python -m sphinx -W -b html docs docs/_build/html`)."""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))  # the checkout being documented, ahead of any installed copy

os.environ.setdefault("JAX_TRACEBACK_FILTERING", "auto")

project = "fluxion"
author = "the fluxion developers"
copyright = "2026, the fluxion developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "fluxion_api",        # generates api/*.rst from the modules
    "fluxion_docstrings", # reads the Markdown-style docstrings as reST
    "fluxion_examples",   # executes every code block of the guides, and draws the plots
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_typehints = "none"          # signatures as written; the docstrings say shapes and dtypes
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # a name without its own docstring shows as such (the docstring test catches it)
autosummary_generate = False        # the module pages list every name themselves (fluxion_api)
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "fluxion"
html_static_path = []
