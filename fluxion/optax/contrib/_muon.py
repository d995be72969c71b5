r"""Muon: momentum orthogonalized by Newton-Schulz iterations.

Jordan et al., "Muon: An optimizer for hidden layers in neural networks"
(2024, kellerjordan.github.io/posts/muon); Liu et al., "Muon is Scalable for
LLM Training" (2025, arXiv:2502.16982) for the RMS-matching scale. The
momentum of each matrix parameter is replaced by an approximation of the
orthogonal factor :math:`UV^T` of its SVD, computed with the quintic iteration
:math:`X \leftarrow aX + (bA + cA^2)X`, :math:`A = XX^T`. Non-matrix
parameters are handled by AdamW in :func:`muon`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, Optional, Union

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, tree_util

from .. import _numerics
from .._alias import adamw
from .._base import (GradientTransformation, MaskOrFn, ScalarOrSchedule, Updates,
                     init_empty_state)
from .._combine import chain, partition
from .._masking import MaskedNode
from .._transform import add_decayed_weights, scale_by_learning_rate
from .._tree_math import tree_bias_correction, tree_cast, tree_update_moment, tree_zeros_like

# Quintic Newton-Schulz coefficients (a, b, c) from Jordan et al. 2024, and the
# per-step schedule of the Dion paper (Ahn et al. 2025, arXiv:2504.05295).
_DEFAULT_NS_COEFFS = (3.4445, -4.775, 2.0315)
_DION_NS_COEFFS = [(4.0848, -6.8946, 2.927), (3.9505, -6.3029, 2.6377),
                   (3.7418, -5.5913, 2.3037), (2.8769, -3.1427, 1.2046),
                   (2.8366, -3.0525, 1.2012)]
_NS_COEFFS_PRESETS = {'standard': _DEFAULT_NS_COEFFS, 'dion': _DION_NS_COEFFS}
_PRECONDITIONINGS = ('frobenius', 'spectral', 'aol', 'schatten')


class MuonDimensionNumbers(NamedTuple):
    """Which axes of a parameter are the matrix's input (``reduction_axis``) and
    output (``output_axis``) dimensions; remaining axes are batch axes."""
    reduction_axis: Union[Sequence[int], int] = 0
    output_axis: Union[Sequence[int], int] = 1


def _is_dim_nums(x: Any) -> bool:
    return isinstance(x, MuonDimensionNumbers)


def _axes(x: Any, dim_nums: MuonDimensionNumbers) -> tuple[tuple[int, ...], tuple[int, ...]]:
    red = dim_nums.reduction_axis
    out = dim_nums.output_axis
    red = (red,) if isinstance(red, int) else tuple(red)
    out = (out,) if isinstance(out, int) else tuple(out)
    return tuple(a % x.ndim for a in red), tuple(a % x.ndim for a in out)


def _matrix_view(x: Any, dim_nums: MuonDimensionNumbers) -> tuple[Callable, Callable]:
    """Functions mapping ``x`` to a (batch, fan_in, fan_out) stack and back."""
    if x.ndim < 2:
        raise ValueError(f'muon: parameters it optimizes must have rank >= 2, got shape {x.shape}.')
    red, out = _axes(x, dim_nums)
    if set(red) & set(out):
        raise ValueError(f'muon: reduction axes {red} and output axes {out} overlap (shape '
                         f'{x.shape}, {dim_nums}).')
    batch = tuple(sorted(set(range(x.ndim)) - set(red) - set(out)))
    perm = batch + red + out
    inv_perm = tuple(sorted(range(x.ndim), key=lambda i: perm[i]))

    def sizes(axes):
        return tuple(x.shape[a] for a in axes)

    flat = (math.prod(sizes(batch)), math.prod(sizes(red)), math.prod(sizes(out)))
    unflat = sizes(batch) + sizes(red) + sizes(out)
    return (lambda y: y.transpose(perm).reshape(flat),
            lambda y: y.reshape(unflat).transpose(inv_perm))


def _fans(x: Any, dim_nums: MuonDimensionNumbers) -> tuple[int, int]:
    red, out = _axes(x, dim_nums)
    return math.prod(x.shape[a] for a in red), math.prod(x.shape[a] for a in out)


def _ns_step(x: Any, coeffs: Any) -> Any:
    gram = x @ x.T.conj()
    poly = coeffs[1] * gram + coeffs[2] * gram @ gram
    return coeffs[0] * x + poly @ x


def _aol_first_step(x: Any, coeffs: Any, eps: Any) -> Any:
    # Almost-orthogonal-layer rescaling (Prach & Lampert 2022): row scaling
    # that bounds the spectral norm by 1, folded into the first iteration.
    gram = x @ x.T.conj()
    s = jnp.expand_dims(lax.rsqrt(jnp.clip(jnp.sum(jnp.abs(gram), axis=-1), eps)), -1)
    x, gram = x * s, gram * s * jnp.swapaxes(s, -1, -2)
    poly = coeffs[1] * gram + coeffs[2] * gram @ gram
    return coeffs[0] * x + poly @ x


def _schatten_first_step(x: Any, coeffs: Any, eps: Any) -> Any:
    # Dividing by sqrt(||X X^T||_F) (a Schatten-4 norm) bounds the spectral norm.
    gram = x @ x.T
    s = lax.rsqrt(jnp.clip(jnp.sqrt(jnp.sum(jnp.square(gram))), eps))
    x, gram = x * s, gram * s ** 2
    poly = coeffs[1] * gram + coeffs[2] * gram @ gram
    return coeffs[0] * x + poly @ x


def orthogonalize_via_newton_schulz(x: Any, ns_coeffs: Any, ns_steps: int = 5,
                                    preconditioning: Literal['frobenius', 'spectral', 'aol',
                                                             'schatten'] = 'frobenius',
                                    eps: Any = 1e-8,
                                    dimension_numbers: Optional[MuonDimensionNumbers] = None
                                    ) -> Any:
    r"""Approximates the orthogonal polar factor of ``x`` by Newton-Schulz iterations.

    Args:
        x: an (m, n) matrix, or any array with ``dimension_numbers``.
        ns_coeffs: (3,) coefficients used ``ns_steps`` times, or (k, 3), one row per step.
        preconditioning: how ``x`` is scaled into the iteration's convergence
            region: by its Frobenius or spectral norm, or inside the first
            step ('aol', 'schatten').

    Returns:
        An array shaped like ``x``.

    Raises:
        ValueError: for a non-matrix without dimension numbers, bad
            coefficient shapes or an unknown preconditioning.
    """
    if x.ndim != 2 and not _is_dim_nums(dimension_numbers):
        raise ValueError('orthogonalize_via_newton_schulz: expected an (m, n) matrix or '
                         f'dimension_numbers, got shape {x.shape} and {dimension_numbers!r}.')
    if x.ndim == 2:
        dimension_numbers = MuonDimensionNumbers(reduction_axis=0, output_axis=1)
    ns_coeffs = jnp.asarray(ns_coeffs)
    if ns_coeffs.ndim > 2 or ns_coeffs.shape[-1] != 3:
        raise ValueError('orthogonalize_via_newton_schulz: ns_coeffs must have shape (3,) or '
                         f'(k, 3), got {ns_coeffs.shape}.')
    if preconditioning not in _PRECONDITIONINGS:
        raise ValueError(f'orthogonalize_via_newton_schulz: unknown preconditioning '
                         f'{preconditioning!r}; expected one of {_PRECONDITIONINGS}.')

    def first_step(m, coeffs):
        if preconditioning == 'aol':
            return _aol_first_step(m, coeffs, eps)
        if preconditioning == 'schatten':
            return _schatten_first_step(m, coeffs, eps)
        return _ns_step(m, coeffs)

    def orthogonalize(m):
        transposed = m.shape[0] > m.shape[1]
        if transposed:
            m = m.T
        if preconditioning == 'frobenius':
            m = m / (jnp.sqrt(jnp.sum(_numerics.abs_sq(m))) + eps)
        elif preconditioning == 'spectral':
            m = m / (jnp.linalg.norm(m, ord=2) + eps)
        coeffs = ns_coeffs.astype(m.dtype)
        rows = [coeffs] * int(ns_steps) if coeffs.ndim == 1 else \
            [coeffs[i] for i in range(coeffs.shape[0])]
        for i, row in enumerate(rows):
            m = first_step(m, row) if i == 0 else _ns_step(m, row)
        return m.T if transposed else m

    to_stack, from_stack = _matrix_view(x, dimension_numbers)
    return from_stack(fluxion.vmap(orthogonalize)(to_stack(x)))


def _resolve(dim_nums: Any, updates: Any) -> Any:
    return dim_nums(updates) if callable(dim_nums) else dim_nums


def _scale_by_shape(weight_dimension_numbers: Any = None,
                    consistent_rms: Optional[Any] = None) -> GradientTransformation:
    """Rescales orthogonalized updates by their shape: ``sqrt(max(1, fan_out/fan_in))``
    (Jordan et al.), or ``consistent_rms * sqrt(max(fan_in, fan_out))`` to match
    AdamW's update RMS (Liu et al. 2025)."""

    def scale_leaf(u, dim_nums):
        fan_in, fan_out = _fans(u, dim_nums)
        if consistent_rms is not None:
            return jnp.sqrt(jnp.maximum(fan_in, fan_out)) * consistent_rms * u
        return jnp.sqrt(jnp.maximum(1, fan_out / fan_in)) * u

    def update_fn(updates, state, params=None):
        del params
        dims = _resolve(weight_dimension_numbers, updates)
        return tree_util.tree_map(scale_leaf, updates, dims, is_leaf=_is_dim_nums), state

    return GradientTransformation(init_empty_state, update_fn)


class MuonState(NamedTuple):
    """State of Muon: ``count``, momentum ``mu`` and the Newton-Schulz coefficients used."""
    count: Any
    mu: Updates
    ns_coeffs: Any


def scale_by_muon(ns_coeffs: Any = _DEFAULT_NS_COEFFS, ns_steps: int = 5, beta: Any = 0.95,
                  eps: Any = 1e-8, mu_dtype: Optional[Any] = None, *, nesterov: bool = True,
                  adaptive: bool = False,
                  preconditioning: Literal['frobenius', 'spectral', 'aol',
                                           'schatten'] = 'frobenius',
                  weight_dimension_numbers: Any = None) -> GradientTransformation:
    r"""Bias-corrected (Nesterov) momentum, orthogonalized per matrix.

    Args:
        ns_coeffs: (3,) or (k, 3) coefficients (for (k, 3) the last
            ``ns_steps`` rows are used, one per step).
        adaptive: multiply the orthogonal factor :math:`O` by
            :math:`\langle \hat m, O\rangle` (AdaMuon-style scale).
        weight_dimension_numbers: a ``MuonDimensionNumbers`` tree matching the
            params (or a function of the updates returning one); needed for
            parameters that are not plain matrices. None: every leaf is an
            (m, n) matrix.

    Returns:
        State ``MuonState(count, mu, ns_coeffs)``.

    Raises:
        ValueError: at init, for bad ``ns_coeffs`` shapes or too few rows.
    """
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        coeffs = jnp.asarray(ns_coeffs)
        if coeffs.ndim > 2 or coeffs.shape[-1] != 3:
            raise ValueError(f'scale_by_muon: ns_coeffs must have shape (3,) or (k, 3), got '
                             f'{coeffs.shape}.')
        if coeffs.ndim == 2:
            if coeffs.shape[0] > ns_steps:
                raise ValueError(f'scale_by_muon: {coeffs.shape[0]} coefficient rows for '
                                 f'ns_steps={ns_steps}; need at most ns_steps rows.')
            coeffs = coeffs[-ns_steps:]
        return MuonState(count=jnp.zeros([], jnp.int32),
                         mu=tree_zeros_like(params, dtype=mu_dtype), ns_coeffs=coeffs)

    def update_fn(updates, state, params=None):
        del params
        dims = _resolve(weight_dimension_numbers, updates)
        mu = tree_update_moment(updates, state.mu, beta, 1)
        count_inc = _numerics.safe_increment(state.count)
        if nesterov:
            mu_hat = tree_util.tree_map(
                lambda m, g: beta * m + (1 - beta) * g,
                tree_bias_correction(mu, beta, _numerics.safe_increment(count_inc)),
                tree_bias_correction(updates, beta, count_inc))
        else:
            mu_hat = tree_bias_correction(mu, beta, count_inc)
        if dims is None:
            # Every leaf is a plain (m, n) matrix. (optax 0.2.8 only accepts
            # None here when the params are a single array.)
            dims = tree_util.tree_map(lambda _: None, mu_hat)
        out = tree_util.tree_map(
            lambda x, d: orthogonalize_via_newton_schulz(x, state.ns_coeffs, ns_steps,
                                                         preconditioning, eps, d),
            mu_hat, dims, is_leaf=lambda x: x is None or _is_dim_nums(x))
        if adaptive:
            out = tree_util.tree_map(lambda m, o: jnp.sum(m.conj() * o) * o, mu_hat, out)
        return out, MuonState(count=count_inc, mu=tree_cast(mu, mu_dtype),
                              ns_coeffs=state.ns_coeffs)

    return GradientTransformation(init_fn, update_fn)


def muon(learning_rate: ScalarOrSchedule, ns_coeffs: Any = _DEFAULT_NS_COEFFS,
         ns_steps: int = 5, beta: Any = 0.95, eps: Any = 1e-8, weight_decay: Any = 0.0,
         weight_decay_mask: MaskOrFn = None, mu_dtype: Optional[Any] = None, *,
         nesterov: bool = True, adaptive: bool = False,
         preconditioning: Literal['frobenius', 'spectral', 'aol', 'schatten'] = 'frobenius',
         adam_b1: Any = 0.9, adam_b2: Any = 0.999, adam_eps_root: Any = 0.0,
         adam_weight_decay: Any = 0.0, adam_learning_rate: Optional[ScalarOrSchedule] = None,
         muon_weight_dimension_numbers: Any = None, consistent_rms: Optional[Any] = None
         ) -> GradientTransformation:
    """Muon for matrix parameters, AdamW for the rest.

    Without ``muon_weight_dimension_numbers`` every 2-d parameter uses Muon
    (rows = inputs) and everything else AdamW. Otherwise it is a tree (or a
    function of params) with a ``MuonDimensionNumbers`` for Muon leaves and
    None for AdamW leaves.

    Args:
        ns_coeffs: coefficients, or the preset name 'standard' / 'dion'.

    Returns:
        ``partition({'muon': chain(scale_by_muon, shape scaling,
        add_decayed_weights, lr), 'adam': adamw(...)}, labels)``.

    Raises:
        ValueError: for an unknown preset name.
    """
    if adam_learning_rate is None:
        adam_learning_rate = learning_rate
    if isinstance(ns_coeffs, str):
        if ns_coeffs not in _NS_COEFFS_PRESETS:
            raise ValueError(f'muon: unknown ns_coeffs preset {ns_coeffs!r}; expected one of '
                             f'{sorted(_NS_COEFFS_PRESETS)}.')
        ns_coeffs = _NS_COEFFS_PRESETS[ns_coeffs]

    if muon_weight_dimension_numbers is None:
        dim_spec: Any = MuonDimensionNumbers()

        def param_labels(params):
            return tree_util.tree_map(lambda x: 'muon' if x.ndim == 2 else 'adam', params)
    else:
        dim_spec = muon_weight_dimension_numbers

        def param_labels(params):
            dims = _resolve(dim_spec, params)
            return tree_util.tree_map(
                lambda d, sub: tree_util.tree_map(lambda _: 'adam' if d is None else 'muon', sub),
                dims, params, is_leaf=lambda x: x is None or _is_dim_nums(x))

    def dims_for(params):
        dims = _resolve(dim_spec, params)
        mask = tree_util.tree_map(lambda label: label == 'muon', param_labels(params))
        return tree_util.tree_map(
            lambda d, sub: tree_util.tree_map(lambda m: d if m else MaskedNode(), sub),
            dims, mask,
            is_leaf=lambda x: x is None or _is_dim_nums(x) or isinstance(x, MaskedNode))

    muon_tx = chain(
        scale_by_muon(ns_coeffs=ns_coeffs, ns_steps=ns_steps, beta=beta, eps=eps,
                      mu_dtype=mu_dtype, nesterov=nesterov, adaptive=adaptive,
                      preconditioning=preconditioning, weight_dimension_numbers=dims_for),
        _scale_by_shape(weight_dimension_numbers=dims_for, consistent_rms=consistent_rms),
        add_decayed_weights(weight_decay, weight_decay_mask),
        scale_by_learning_rate(learning_rate))
    adam_tx = adamw(learning_rate=adam_learning_rate, b1=adam_b1, b2=adam_b2, eps=eps,
                    eps_root=adam_eps_root, weight_decay=adam_weight_decay, mu_dtype=mu_dtype,
                    nesterov=nesterov)
    return partition(transforms={'muon': muon_tx, 'adam': adam_tx}, param_labels=param_labels)
