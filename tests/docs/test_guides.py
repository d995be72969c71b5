"""Every code block of the guides in `docs/` runs (the same check the docs build makes, without Sphinx).

The pages run in a child process: the internals guide registers a demonstration primitive and the porting guide
runs a program under `fluxion.run`, neither of which should touch the test process (where the real JAX may be
imported as an oracle).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "docs" / "_ext"

_RUNNER = """
import sys
from pathlib import Path
sys.path[:0] = [{ext!r}, {root!r}]
import fluxion_examples
for name in fluxion_examples.GUIDES:
    n = fluxion_examples.run_page(Path({docs!r}) / (name + ".md"))
    print(name, n)
"""


def test_every_guide_block_runs():
    code = _RUNNER.format(ext=str(EXT), root=str(ROOT), docs=str(ROOT / "docs"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ran = dict(line.split() for line in proc.stdout.split("\n") if line.strip())
    sys.path.insert(0, str(EXT))
    try:
        import fluxion_examples
    finally:
        sys.path.remove(str(EXT))
    assert set(ran) == set(fluxion_examples.GUIDES)
    assert all(int(n) > 0 for n in ran.values()), ran


def test_a_failing_block_is_reported_with_its_place(tmp_path):
    sys.path.insert(0, str(EXT))
    try:
        import fluxion_examples
    finally:
        sys.path.remove(str(EXT))
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\n>>> 1 + 1\n3\n```\n")
    try:
        fluxion_examples.run_page(page)
    except fluxion_examples.ExampleError as e:
        assert "page.md:3" in str(e)
    else:
        raise AssertionError("a wrong doctest output was not reported")
    page.write_text("# t\n\n```rust\nfn main() {}\n```\n")
    try:
        fluxion_examples.run_page(page)
    except fluxion_examples.ExampleError as e:
        assert "rust" in str(e)
    else:
        raise AssertionError("a block in an unknown language was not reported")
    page.write_text("# t\n\n```console\n$ python -m fluxion.no_such_module\n```\n")
    try:
        fluxion_examples.run_page(page)
    except fluxion_examples.ExampleError as e:
        assert "fluxion.no_such_module" in str(e)
    else:
        raise AssertionError("a command naming a missing module was not reported")
