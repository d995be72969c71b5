"""Runs a JAX program unmodified on fluxion: `python -m fluxion.run prog.py [args...]` or
`python -m fluxion.run -m package.module [args...]`.

`import jax`, `flax`, `optax`, `haiku`, `rlax` and `clu` inside the program (and anything it imports) resolve to
fluxion's mirrors (see `fluxion.install_aliases`); `sys.argv` is what the program would see if run directly.
"""

from __future__ import annotations

import runpy
import sys

from ._src.aliases import install_aliases

_USAGE = "usage: python -m fluxion.run prog.py [args...]  |  python -m fluxion.run -m module [args...]"


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(_USAGE, file=sys.stderr)
        raise SystemExit(2)
    install_aliases()
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
