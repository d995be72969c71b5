"""Runs every code block of the guides, so an example in the docs cannot rot, and draws the guides' plots.

A guide is a Markdown page of `docs/`. Its fenced code blocks are run in order in one namespace per page:

- ` ```python ` blocks whose lines start with `>>>` are doctests: each statement's printed output must match the
  lines under it (NORMALIZE_WHITESPACE and ELLIPSIS are on);
- other ` ```python ` blocks are executed as they are (a block that should fail must catch its error and print it);
- ` ```console ` / ` ```bash ` blocks are commands: each `python -m MODULE` in them must name an importable module
  (the commands themselves, such as a training run, are run by the test suite, not by the docs build).

Any other fence language fails, so a new block cannot silently escape execution. The same `run_page` serves the
Sphinx build (`source-read`, which fails the build on an error) and `tests/docs/test_guides.py`.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import importlib.util
import re
import shlex
import sys
import threading
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent
GUIDES = ["index", "getting_started", "porting", "sharp_bits", "performance", "guarantees", "internals"]

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")
PYTHON = {"python", "py", "pycon"}
SHELL = {"console", "bash", "sh", "shell"}
TEXT = {"text", "output"}  # printed output shown verbatim (for example a command's measured output)


class ExampleError(Exception):
    """A guide's code block failed: the message names the page, the block's first line and what went wrong."""


class _Runner(doctest.DocTestRunner):
    """A doctest runner that puts its capture back when `sys.stdout` is not doctest's capture before an example, and
    whose failure report says when it was not while the example ran.

    An example's printed output reaches doctest only through `sys.stdout`; code that swaps `sys.stdout` from another
    thread (a non-thread-safe `redirect_stdout`) makes the output vanish ("Got nothing"). Two CI builds showed that
    for the threads example of guarantees.md (the interpreter's own stdout had replaced the capture, and the
    expected output was printed there); it has not been reproduced in 15 builds here, 11 of them with a hook on every
    assignment of `sys.stdout` recording the assigning thread and stack (none but doctest's own). fluxion assigns
    `sys.stdout` nowhere. A swap between examples is now repaired and reported on stderr with the threads alive.
    """

    def report_start(self, out, test, example):
        if sys.stdout is not self._fakeout:
            threads = ", ".join(t.name for t in threading.enumerate())
            line = test.lineno + example.lineno + 1
            sys.__stderr__.write(f"{test.name}: sys.stdout was {sys.stdout!r} before the example at line {line}; "
                                 f"doctest's capture put back (threads: {threads})\n")
            sys.stdout = self._fakeout
        super().report_start(out, test, example)

    def report_failure(self, out, test, example, got):
        super().report_failure(out, test, example, got)
        if sys.stdout is not self._fakeout:
            out(f"sys.stdout was replaced while the example ran: {sys.stdout!r}\n")


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, code, 1-based line of the opening fence) of every fenced block of a Markdown text. A MyST
    directive fence ```` ```{code-block} python ```` counts as a block of its argument's language."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        lang = info.split()[0] if info else ""
        if lang.startswith("{"):  # a MyST directive
            directive = lang.strip("{}")
            if directive not in ("code-block", "code"):
                continue  # figures, toctrees, notes: no code of their own
            lang = info.split()[1] if len(info.split()) > 1 else ""
            body = [b for b in body if not b.startswith(":")]
        out.append((lang, "\n".join(body), start + 1))
    return out


def _check_command(code: str, where: str) -> None:
    for line in code.split("\n"):
        line = line.strip().lstrip("$").strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        for j, w in enumerate(words[:-1]):
            if w == "-m" and j > 0 and words[j - 1].endswith("python"):
                mod = words[j + 1]
                if importlib.util.find_spec(mod) is None:
                    raise ExampleError(f"{where}: `python -m {mod}` names a module that does not exist")


def run_page(path: Path, text: str | None = None) -> int:
    """Runs every code block of one guide (see the module docstring); returns how many blocks ran. Raises
    ExampleError on the first failure."""
    text = path.read_text() if text is None else text
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    parser = doctest.DocTestParser()
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    ran = 0
    for lang, code, line in code_blocks(text):
        where = f"{path.name}:{line}"
        if lang in PYTHON:
            if code.lstrip().startswith(">>>"):
                test = parser.get_doctest(code, namespace, f"{path.stem}:{line}", str(path), line)
                runner = _Runner(optionflags=flags, verbose=False)
                report = []
                stdout = sys.stdout
                runner.run(test, out=report.append, clear_globs=False)
                if sys.stdout is not stdout:
                    swapped, sys.stdout = sys.stdout, stdout
                    raise ExampleError(f"{where}: sys.stdout was left replaced by {swapped!r} after the block ran")
                namespace.update(test.globs)  # DocTest works on a copy; later blocks see this one's names
                if runner.failures or runner.tries == 0:
                    raise ExampleError(f"{where}: doctest failed\n" + "".join(report))
            else:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):  # what a block prints is not build output
                        exec(compile(code, where, "exec"), namespace)
                except Exception as e:  # noqa: BLE001 - reported with the block's place
                    raise ExampleError(f"{where}: {type(e).__name__}: {e}") from e
        elif lang in SHELL:
            _check_command(code, where)
        elif lang in TEXT:
            continue
        else:
            raise ExampleError(f"{where}: code block of language {lang!r}: use python (executed), console "
                               f"(commands checked) or text (shown output)")
        ran += 1
    return ran


def _on_source_read(app, docname, source):
    if docname not in GUIDES:
        return
    path = Path(app.srcdir) / f"{docname}.md"
    try:
        run_page(path, source[0])
    except ExampleError as e:
        from sphinx.errors import ExtensionError
        raise ExtensionError(f"a code block of the guides failed: {e}") from e


def _on_builder_inited(app):
    # The plots train the MNIST model with fluxion, whose threaded kernels start Numba's OpenMP thread pool. Drawn in
    # this process, `sphinx -j` would then fork its readers from a process using GNU OpenMP, and a reader running a
    # threaded kernel (the guides' examples) is terminated by libgomp ("fork() called from a process already using
    # GNU OpenMP"). So they are drawn in a child process of their own.
    import subprocess
    import sys
    code = "import sys; from pathlib import Path; import plots; plots.draw_all(Path(sys.argv[1]))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DOCS / "_ext"), str(DOCS.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-c", code, str(Path(app.srcdir) / "_generated")], check=True, env=env)


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
