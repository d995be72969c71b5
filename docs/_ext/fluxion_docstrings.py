"""Makes fluxion's docstrings render as reStructuredText without warnings.

fluxion's docstrings follow two conventions: the libraries' (``optax``, ``flax``) are reStructuredText with roles and
double backticks, while much of the core writes Markdown-style `code` in single backticks and plain `*`, `|` and
`name_` in prose (`*args`, `|x|`, `bool_`). Rather than rewrite hundreds of docstrings, this hook (run before
napoleon) reads them as a person would: a single-backtick span not preceded by a role becomes inline code, and
`*`, `|` and a trailing `_` in prose are escaped. Doctest blocks (from `>>>` to the next blank line), literal blocks
(after a line ending in `::`) and role or double-backtick spans are left as written.

Objects that fluxion re-exports from another library (NumPy's `printoptions`, typing helpers) show one line naming
their origin instead of that library's own docstring; an object whose docstring is its class's (a primitive such as
`fluxion.lax.exp_p`) says which class it is.
"""

from __future__ import annotations

import inspect
import re

_SPAN = re.compile(r"(:[\w:.-]+:`[^`]*`|``[^`]*(?:`[^`]+)*``|`[^`]+`_?_?)")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[\s.,;:)\]}'\"]|$)")


def _table_row(line: str) -> bool:
    line = line.strip()
    return (line.startswith("|") and line.endswith("|")) or (line.startswith("+") and line.endswith("+"))


# A `*` that reST reads correctly is left alone: a list bullet, or the delimiters of a well-formed `**strong**` or
# `*emphasis*` span on one line (reST's rules: the opening star is followed by a non-space, the closing one preceded
# by one, and neither touches a word character). Every other star (`*args`, `x**2`, `a * b`) is escaped.
_STAR_OK = re.compile(r"(?m)(^[ \t]*\*(?= ))"
                      r"|((?<![\w*\\])\*\*(?=\S)[^\n]*?(?<=[^\s*])\*\*(?![\w*]))"
                      r"|((?<![\w*\\])\*(?=[^\s*])[^\n*]*?(?<=[^\s*])\*(?![\w*]))")


def _escape_stars(text: str) -> str:
    out, last = [], 0
    for m in _STAR_OK.finditer(text):
        out.append(text[last:m.start()].replace("*", r"\*"))
        out.append(m.group(0))
        last = m.end()
    out.append(text[last:].replace("*", r"\*"))
    return "".join(out)


def _escape_prose(text: str) -> str:
    text = _escape_stars(text.replace("\\", "\\\\"))
    # `|` starts a substitution reference in reST; a line that starts with one is a table row, left alone.
    text = "\n".join(seg if _table_row(seg) else seg.replace("|", r"\|") for seg in text.split("\n"))
    return _TRAILING_UNDERSCORE.sub(r"\\_", text)


def _fix_prose(text: str) -> str:
    """One run of prose lines: spans may continue over a line break."""
    parts = _SPAN.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(_escape_prose(part))
            continue
        if part.startswith(":") or part.startswith("``") or part.endswith("_"):
            code = part  # a role, inline code already, or a reST hyperlink reference `text`_
        else:
            code = "``" + " ".join(part[1:-1].split()) + "``"
        # Inline markup must be separated from neighbouring word characters: `y`s -> ``y``\ s.
        if out and out[-1] and (out[-1][-1].isalnum() or out[-1][-1] in "_)"):
            code = "\\ " + code
        after = parts[i + 1] if i + 1 < len(parts) else ""
        if after and (after[0].isalnum() or after[0] in "_("):
            code = code + "\\ "
        out.append(code)
    return "".join(out)


def fix_lines(lines: list[str]) -> list[str]:
    """The docstring's lines with prose made reST-safe (see the module docstring)."""
    out: list[str] = []
    prose: list[str] = []

    def flush():
        if prose:
            out.extend(_fix_prose("\n".join(prose)).split("\n"))
            prose.clear()

    in_doctest = False
    literal_indent = None  # indentation of the paragraph that opened a literal block
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if stripped and indent <= literal_indent:
                literal_indent = None
            else:
                out.append(line)
                continue
        if stripped.startswith(">>>"):
            in_doctest = True
        elif not stripped:
            in_doctest = False
        if in_doctest or stripped.startswith(".. ") or not stripped:
            flush()
            out.append(line)
            continue
        prose.append(line)
        if stripped.endswith("::"):
            flush()
            literal_indent = indent
    flush()
    return out


def _origin(obj) -> str:
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    return mod or ""


def _process(app, what, name, obj, options, lines):
    origin = _origin(obj)
    if (inspect.isclass(obj) or callable(obj)) and origin and not origin.startswith("fluxion") \
            and not origin.startswith("docs_"):
        qual = getattr(obj, "__qualname__", None) or getattr(obj, "_name", None) or repr(obj)
        lines[:] = [f"Re-exported unchanged from ``{origin}`` (``{origin}.{qual}``); see that library's "
                    f"documentation."]
        return
    if what in ("data", "attribute") and not inspect.isclass(obj) and not callable(obj):
        cls = type(obj)
        if (obj.__doc__ or "") == (cls.__doc__ or ""):
            label = getattr(obj, "name", None)
            what_it_is = f"The ``{label}`` primitive" if cls.__name__.endswith("Primitive") and label else "An object"
            lines[:] = [f"{what_it_is}: an instance of ``{cls.__module__}.{cls.__qualname__}``."]
            return
    lines[:] = fix_lines(lines)


def setup(app):
    app.connect("autodoc-process-docstring", _process, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
