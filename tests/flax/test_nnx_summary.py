"""nnx.tabulate against Flax's (the oracle): the same table, cell for cell.

Flax renders with ``rich``; asked for a wide plain console it draws the same
box table as fluxion's plain-text renderer, so the texts are compared line by
line (trailing spaces dropped) and, for a clearer failure, as parsed rows.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

import fluxion.numpy as fjnp
from fluxion.flax import nnx


def _ours() -> Any:
    return types.SimpleNamespace(nnx=nnx, jnp=fjnp, kw={})


def _theirs() -> Any:
    fnnx = pytest.importorskip('flax.nnx')
    jax = pytest.importorskip('jax')
    return types.SimpleNamespace(nnx=fnnx, jnp=jax.numpy,
                                 kw={'console_kwargs': {'force_terminal': False, 'width': 1000, 'no_color': True}})


def _blocks(L: Any) -> Any:
    class Block(L.nnx.Module):
        def __init__(self, din, dout, rngs):
            self.linear = L.nnx.Linear(din, dout, rngs=rngs)
            self.bn = L.nnx.BatchNorm(dout, rngs=rngs)
            self.dropout = L.nnx.Dropout(0.2, rngs=rngs)

        def __call__(self, x):
            return L.nnx.relu(self.dropout(self.bn(self.linear(x))))

    class Foo(L.nnx.Module):
        def __init__(self, rngs):
            self.block1 = Block(32, 128, rngs=rngs)
            self.block2 = Block(128, 10, rngs=rngs)

        def __call__(self, x):
            return self.block2(self.block1(x))

        def both(self, x, y=None, *, scale=1.0):
            return self.block1(x), {'twice': self.block1(x) * scale}
    return Foo(L.nnx.Rngs(0))


def _shared_and_metadata(L: Any) -> Any:
    class Tied(L.nnx.Module):
        def __init__(self, rngs):
            self.enc = L.nnx.Linear(4, 4, rngs=rngs)
            self.dec = self.enc  # shared: counted once, at its first path
            self.scale = L.nnx.Param(L.jnp.ones((4,)), note='tied scale')
            self.layers = L.nnx.List([L.nnx.Linear(4, 4, use_bias=False, rngs=rngs) for _ in range(2)])
            self.steps = L.nnx.BatchStat(L.jnp.array(0, dtype=L.jnp.int32))

        def __call__(self, x):
            self.steps[...] += 1
            for layer in self.layers:
                x = layer(x)
            return self.dec(self.enc(x)) * self.scale[...]
    return Tied(L.nnx.Rngs(1))


CASES = {
    'blocks': (_blocks, lambda L: ((L.jnp.ones((1, 32)),), {})),
    'blocks_depth1_method_kwargs': (_blocks, lambda L: ((L.jnp.ones((2, 32)),),
                                                        {'depth': 1, 'method': 'both', 'y': L.jnp.ones(3),
                                                         'scale': 2.0})),
    'blocks_row_filter': (_blocks, lambda L: ((L.jnp.ones((1, 32)),),
                                              {'row_filter': lambda row: row.type.__name__ != 'BatchNorm'})),
    'shared_metadata_lists': (_shared_and_metadata, lambda L: ((L.jnp.ones((3, 4)),), {})),
    'sequential_lora': (lambda L: L.nnx.Sequential(L.nnx.LoRALinear(3, 4, lora_rank=2, rngs=L.nnx.Rngs(0)),
                                                   L.nnx.relu, L.nnx.LayerNorm(4, rngs=L.nnx.Rngs(1))),
                        lambda L: ((L.jnp.ones((2, 3)),), {})),
}


def _table(L: Any, name: str) -> str:
    make, inputs = CASES[name]
    args, kwargs = inputs(L)
    return L.nnx.tabulate(make(L), *args, **kwargs, **L.kw)


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _rows(text: str) -> list[list[str]]:
    """The table's rows as lists of cells (multi-line cells joined by newlines)."""
    rows, current = [], None
    for line in _lines(text):
        if line and line[0] in '│┃':
            cells = [c.strip() for c in line[1:-1].split(line[0])]
            current = cells if current is None else [f'{a}\n{b}' for a, b in zip(current, cells)]
        elif current is not None:
            rows.append([c.strip('\n') for c in current])
            current = None
    return rows


@pytest.mark.parametrize('name', sorted(CASES))
def test_tabulate_matches_flax(name):
    expected = _table(_theirs(), name)
    got = _table(_ours(), name)
    assert _rows(got) == _rows(expected)
    assert _lines(got) == _lines(expected)


def test_tabulate_does_not_touch_the_model_and_rejects_flops():
    model = _shared_and_metadata(_ours())
    before = {p: np.asarray(v.get_value()) for p, v in nnx.to_flat_state(nnx.state(model))}
    nnx.tabulate(model, fjnp.ones((3, 4)))
    after = {p: np.asarray(v.get_value()) for p, v in nnx.to_flat_state(nnx.state(model))}
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)
    assert type(model).__call__.__name__ == '__call__' and '__call__' in type(model).__dict__
    with pytest.raises(NotImplementedError, match='FLOP'):
        nnx.tabulate(model, fjnp.ones((3, 4)), compute_flops=True)
    with pytest.raises(AttributeError, match='no public method'):
        nnx.tabulate(model, fjnp.ones((3, 4)), method='nope')


def test_display_prints_each_object(capsys):
    nnx.display(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), 'second')
    out = capsys.readouterr().out
    assert out.startswith('Linear(') and out.rstrip().endswith('second')
