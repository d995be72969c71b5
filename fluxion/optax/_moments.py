r"""Adaptive scalings built from moment estimates beyond plain Adam.

AMSGrad, AdaMax, AdaBelief, Yogi, RAdam, AdaDelta, Adan, NovoGrad and SM3.
Notation as in :mod:`fluxion.optax._transform`: :math:`g_t` is the incoming
update at step :math:`t = 1, 2, \dots`; everything is elementwise unless a
norm is written. State layouts (NamedTuple names, field order, int32 counters)
are optax 0.2.x's; AdaMax, Yogi and RAdam reuse ``ScaleByAdamState`` as optax
does.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, Optional

import fluxion.numpy as jnp
from fluxion import lax, tree_util

from . import _numerics
from ._base import GradientTransformation, Updates, require_params
from ._transform import ScaleByAdamState
from ._tree_math import (tree_add_scale, tree_bias_correction, tree_cast, tree_div,
                         tree_full_like, tree_sub, tree_update_infinity_moment,
                         tree_update_moment, tree_update_moment_per_elem_norm, tree_where,
                         tree_zeros_like)


def _count_zero() -> Any:
    return jnp.zeros([], jnp.int32)


def _is_none(x: Any) -> bool:
    return x is None


def _adam_ratio(mu_hat: Any, nu_hat: Any, eps: Any, eps_root: Any) -> Any:
    """``m / (sqrt(v + eps_root) + eps)`` leafwise, skipping None leaves."""
    return tree_util.tree_map(
        lambda m, v: None if m is None else m / (jnp.sqrt(v + eps_root) + eps),
        mu_hat, nu_hat, is_leaf=_is_none)


def _nesterov_mu_hat(mu: Any, updates: Any, b1: Any, count_inc: Any) -> Any:
    """NAdam's look-ahead first moment (Dozat 2016)."""
    return tree_util.tree_map(
        lambda m, g: b1 * m + (1 - b1) * g,
        tree_bias_correction(mu, b1, _numerics.safe_increment(count_inc)),
        tree_bias_correction(updates, b1, count_inc))


def _reject_complex(params: Any, name: str) -> None:
    if any(_numerics.is_complex(x) for x in tree_util.tree_leaves(params)):
        raise ValueError(f'{name}: complex parameters are not supported.')


# ----------------------------------------------------------------------------
# Adam variants.


class ScaleByAmsgradState(NamedTuple):
    """State of AMSGrad: ``count``, moments ``mu``/``nu`` and running max ``nu_max``."""
    count: Any
    mu: Updates
    nu: Updates
    nu_max: Updates


def scale_by_amsgrad(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                     mu_dtype: Optional[Any] = None, bias_correction_mu: bool = True,
                     bias_correction_nu: bool = True) -> GradientTransformation:
    r"""AMSGrad (Reddi, Kale & Kumar, "On the Convergence of Adam and Beyond", ICLR 2018).

    Adam whose denominator uses the running maximum of the (bias-corrected)
    second moment: :math:`\hat v^{max}_t = \max(\hat v^{max}_{t-1}, \hat v_t)`,
    :math:`u_t = \hat m_t / (\sqrt{\hat v^{max}_t + \epsilon_{root}} + \epsilon)`.
    The maximum is taken *after* bias correction, as in optax (PyTorch's
    ``amsgrad=True`` takes it before).

    Args:
        b1, b2, eps, eps_root, mu_dtype: as in :func:`scale_by_adam`.
        bias_correction_mu, bias_correction_nu: apply Adam's bias corrections.

    Returns:
        State ``ScaleByAmsgradState(count, mu, nu, nu_max)``.
    """
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAmsgradState(count=_count_zero(),
                                   mu=tree_zeros_like(params, dtype=mu_dtype),
                                   nu=tree_zeros_like(params), nu_max=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _numerics.safe_increment(state.count)
        mu_hat = tree_bias_correction(mu, b1, count_inc) if bias_correction_mu else mu
        nu_eff = tree_bias_correction(nu, b2, count_inc) if bias_correction_nu else nu
        nu_max = tree_util.tree_map(jnp.maximum, state.nu_max, nu_eff)
        updates = _adam_ratio(mu_hat, nu_max, eps, eps_root)
        return updates, ScaleByAmsgradState(count=count_inc, mu=tree_cast(mu, mu_dtype),
                                            nu=nu, nu_max=nu_max)

    return GradientTransformation(init_fn, update_fn)


def scale_by_adamax(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8) -> GradientTransformation:
    r"""AdaMax (Kingma & Ba 2014, section 7.1): Adam with the infinity norm.

    :math:`v_t = \max(|g_t| + \epsilon, \beta_2 v_{t-1})`,
    :math:`u_t = \hat m_t / v_t`.

    Returns:
        State ``ScaleByAdamState(count, mu, nu)`` with ``nu`` the infinity moment.
    """

    def init_fn(params):
        return ScaleByAdamState(count=_count_zero(), mu=tree_zeros_like(params),
                                nu=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        count_inc = _numerics.safe_increment(state.count)
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_infinity_moment(updates, state.nu, b2, eps)
        mu_hat = tree_bias_correction(mu, b1, count_inc)
        return tree_div(mu_hat, nu), ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleByBeliefState(NamedTuple):
    """State of AdaBelief: ``count``, first moment ``mu``, belief variance ``nu``."""
    count: Any
    mu: Updates
    nu: Updates


def scale_by_belief(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-16, eps_root: Any = 1e-16,
                    *, nesterov: bool = False) -> GradientTransformation:
    r"""AdaBelief (Zhuang et al., NeurIPS 2020, arXiv:2010.07468).

    The second moment tracks the "belief" :math:`(g_t - m_t)^2` instead of
    :math:`g_t^2`: :math:`s_t = \beta_2 s_{t-1} + (1-\beta_2)(g_t - m_t)^2 +
    \epsilon_{root}` (the stored ``nu`` includes :math:`\epsilon_{root}`), and
    :math:`u_t = \hat m_t / (\sqrt{\hat s_t} + \epsilon)`.

    Returns:
        State ``ScaleByBeliefState(count, mu, nu)``.
    """

    def init_fn(params):
        return ScaleByBeliefState(count=_count_zero(), mu=tree_zeros_like(params),
                                  nu=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        belief = tree_sub(updates, mu)
        nu = tree_update_moment_per_elem_norm(belief, state.nu, b2, 2)
        nu = tree_util.tree_map(lambda v: v + eps_root, nu)
        count_inc = _numerics.safe_increment(state.count)
        mu_hat = (_nesterov_mu_hat(mu, updates, b1, count_inc) if nesterov
                  else tree_bias_correction(mu, b1, count_inc))
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        updates = _adam_ratio(mu_hat, nu_hat, eps, 0.0)
        return updates, ScaleByBeliefState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def scale_by_yogi(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-3, eps_root: Any = 0.0,
                  initial_accumulator_value: Any = 1e-6) -> GradientTransformation:
    r"""Yogi (Zaheer et al., "Adaptive Methods for Nonconvex Optimization", NeurIPS 2018).

    Additive second-moment update
    :math:`v_t = v_{t-1} - (1-\beta_2)\,\mathrm{sign}(v_{t-1} - g_t^2)\, g_t^2`;
    both moments start at ``initial_accumulator_value``; the update is Adam's
    bias-corrected ratio.

    Returns:
        State ``ScaleByAdamState(count, mu, nu)``.
    """

    def init_fn(params):
        return ScaleByAdamState(count=_count_zero(),
                                mu=tree_full_like(params, initial_accumulator_value),
                                nu=tree_full_like(params, initial_accumulator_value))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_util.tree_map(
            lambda g, v: v - (1 - b2) * jnp.sign(v - _numerics.abs_sq(g)) * _numerics.abs_sq(g),
            updates, state.nu)
        count_inc = _numerics.safe_increment(state.count)
        updates = _adam_ratio(tree_bias_correction(mu, b1, count_inc),
                              tree_bias_correction(nu, b2, count_inc), eps, eps_root)
        return updates, ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


def scale_by_radam(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                   threshold: Any = 5.0, *, nesterov: bool = False) -> GradientTransformation:
    r"""Rectified Adam (Liu et al., "On the Variance of the Adaptive Learning Rate
    and Beyond", ICLR 2020, arXiv:1908.03265, Algorithm 2).

    With :math:`\rho_\infty = 2/(1-\beta_2) - 1` and
    :math:`\rho_t = \rho_\infty - 2t\beta_2^t/(1-\beta_2^t)`, the update is
    :math:`r_t \hat m_t/(\sqrt{\hat v_t + \epsilon_{root}} + \epsilon)` with the
    rectifier :math:`r_t = \sqrt{\frac{(\rho_t-4)(\rho_t-2)\rho_\infty}
    {(\rho_\infty-4)(\rho_\infty-2)\rho_t}}` when :math:`\rho_t \ge` ``threshold``,
    else the un-normalised :math:`\hat m_t` (SGD with momentum).

    Returns:
        State ``ScaleByAdamState(count, mu, nu)``.
    """
    ro_inf = 2.0 / (1.0 - b2) - 1.0

    def init_fn(params):
        return ScaleByAdamState(count=_count_zero(), mu=tree_zeros_like(params),
                                nu=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _numerics.safe_increment(state.count)
        b2t = b2 ** count_inc
        ro = ro_inf - 2 * count_inc * b2t / (1 - b2t)
        mu_hat = (_nesterov_mu_hat(mu, updates, b1, count_inc) if nesterov
                  else tree_bias_correction(mu, b1, count_inc))
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        rect = jnp.sqrt((ro - 4.0) * (ro - 2.0) * ro_inf / ((ro_inf - 4.0) * (ro_inf - 2.0) * ro))
        rectified = tree_util.tree_map(
            lambda m, v: rect.astype(m.dtype) * m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
        updates = tree_util.tree_map(lambda r, m: jnp.where(ro >= threshold, r, m),
                                     rectified, mu_hat)
        return updates, ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


# ----------------------------------------------------------------------------
# Other second-order-moment methods.


class ScaleByAdaDeltaState(NamedTuple):
    """State of AdaDelta: EMAs of squared gradients ``e_g`` and squared steps ``e_x``."""
    e_g: Updates
    e_x: Updates


def scale_by_adadelta(rho: Any = 0.9, eps: Any = 1e-6) -> GradientTransformation:
    r"""AdaDelta (Zeiler 2012, arXiv:1212.5701, Algorithm 1).

    :math:`E[g^2]_t = \rho E[g^2]_{t-1} + (1-\rho) g_t^2`,
    :math:`u_t = \sqrt{E[\Delta x^2]_{t-1} + \epsilon}/\sqrt{E[g^2]_t + \epsilon}\; g_t`,
    :math:`E[\Delta x^2]_t = \rho E[\Delta x^2]_{t-1} + (1-\rho) u_t^2`.

    Returns:
        State ``ScaleByAdaDeltaState(e_g, e_x)``.
    """

    def init_fn(params):
        return ScaleByAdaDeltaState(e_g=tree_zeros_like(params), e_x=tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        del params
        e_g = tree_update_moment(updates, state.e_g, rho, 2)
        updates = tree_util.tree_map(
            lambda g, eg, ex: jnp.sqrt(ex + eps) / jnp.sqrt(eg + eps) * g,
            updates, e_g, state.e_x)
        e_x = tree_update_moment(updates, state.e_x, rho, 2)
        return updates, ScaleByAdaDeltaState(e_g=e_g, e_x=e_x)

    return GradientTransformation(init_fn, update_fn)


class ScaleByAdanState(NamedTuple):
    """State of Adan: moments ``m``, ``v``, ``n``, previous gradient ``g``, step ``t``."""
    m: Updates
    v: Updates
    n: Updates
    g: Updates
    t: Any


def scale_by_adan(b1: Any = 0.98, b2: Any = 0.92, b3: Any = 0.99, eps: Any = 1e-8,
                  eps_root: Any = 0.0) -> GradientTransformation:
    r"""Adan (Xie et al., "Adaptive Nesterov Momentum Algorithm", arXiv:2208.06677).

    With :math:`d_t = g_t - g_{t-1}` (0 at the first step):
    :math:`m_t = \mathrm{EMA}_{\beta_1}(g)`, :math:`v_t = \mathrm{EMA}_{\beta_2}(d)`,
    :math:`n_t = \mathrm{EMA}_{\beta_3}((g_t + (1-\beta_2) d_t)^2)`, and
    :math:`u_t = (\hat m_t + (1-\beta_2)\hat v_t)/(\sqrt{\hat n_t + \epsilon_{root}}
    + \epsilon)` with bias-corrected hats. Note optax's ``b1, b2, b3`` are the
    paper's :math:`1-\beta_1, 1-\beta_2, 1-\beta_3`.

    Returns:
        State ``ScaleByAdanState(m, v, n, g, t)``.
    """

    def init_fn(params):
        return ScaleByAdanState(m=tree_zeros_like(params), v=tree_zeros_like(params),
                                n=tree_zeros_like(params), g=tree_zeros_like(params),
                                t=_count_zero())

    def update_fn(updates, state, params=None):
        del params
        g = updates
        diff = tree_where(state.t == 0, tree_zeros_like(g), tree_sub(g, state.g))
        m = tree_update_moment(g, state.m, b1, 1)
        v = tree_update_moment(diff, state.v, b2, 1)
        n = tree_update_moment_per_elem_norm(tree_add_scale(g, 1 - b2, diff), state.n, b3, 2)
        t = _numerics.safe_increment(state.t)
        direction = tree_add_scale(tree_bias_correction(m, b1, t), 1 - b2,
                                   tree_bias_correction(v, b2, t))
        denom = tree_util.tree_map(lambda x: jnp.sqrt(x + eps_root) + eps,
                                   tree_bias_correction(n, b3, t))
        return tree_div(direction, denom), ScaleByAdanState(m=m, v=v, n=n, g=g, t=t)

    return GradientTransformation(init_fn, update_fn)


class ScaleByNovogradState(NamedTuple):
    """State of NovoGrad: ``count``, momentum ``mu``, per-layer scalar ``nu``."""
    count: Any
    mu: Updates
    nu: Updates


def scale_by_novograd(b1: Any = 0.9, b2: Any = 0.25, eps: Any = 1e-8, eps_root: Any = 0.0,
                      weight_decay: Any = 0.0, mu_dtype: Optional[Any] = None
                      ) -> GradientTransformation:
    r"""NovoGrad (Ginsburg et al. 2019, arXiv:1905.11286): layer-wise second moments.

    Per leaf (layer) :math:`l`: :math:`v^l_t = \beta_2 v^l_{t-1} + (1-\beta_2)\|g^l_t\|^2`
    (:math:`v^l_1 = \|g^l_1\|^2`) and
    :math:`m^l_t = \beta_1 m^l_{t-1} + g^l_t/(\sqrt{v^l_t + \epsilon_{root}} + \epsilon)
    + \lambda\theta^l` (:math:`m^l_1` without the :math:`\beta_1` term). The
    update is :math:`m_t`.

    Returns:
        State ``ScaleByNovogradState(count, mu, nu)``; ``nu`` has one scalar per
        leaf. Requires ``params``.
    """
    mu_dtype = _numerics.canonicalize_dtype(mu_dtype)

    def sq_norm(g):
        return jnp.sum(_numerics.abs_sq(g))

    def init_fn(params):
        return ScaleByNovogradState(
            count=_count_zero(), mu=tree_zeros_like(params, dtype=mu_dtype),
            nu=tree_util.tree_map(lambda p: jnp.asarray(0.0, dtype=p.dtype), params))

    def update_fn(updates, state, params=None):
        require_params(params, 'scale_by_novograd')
        count_inc = _numerics.safe_increment(state.count)
        first = count_inc == 1
        nu = tree_util.tree_map(
            lambda g, n: jnp.where(first, sq_norm(g).astype(n.dtype),
                                   b2 * n + (1 - b2) * sq_norm(g)),
            updates, state.nu)
        step = tree_util.tree_map(
            lambda g, p, n: g / (jnp.sqrt(n + eps_root) + eps) + weight_decay * p,
            updates, params, nu)
        mu = tree_util.tree_map(
            lambda m, s: None if m is None else jnp.where(first, s, b1 * m + s),
            state.mu, step, is_leaf=_is_none)
        mu = tree_cast(mu, mu_dtype)
        return mu, ScaleByNovogradState(count=count_inc, mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)


class ScaleBySM3State(NamedTuple):
    """State of SM3: per-axis accumulators ``mu`` (a list per leaf) and momentum ``nu``."""
    mu: Updates
    nu: Updates


def scale_by_sm3(b1: Any = 0.9, b2: Any = 1.0, eps: Any = 1e-8) -> GradientTransformation:
    r"""SM3 (Anil et al., "Memory-Efficient Adaptive Optimization", NeurIPS 2019).

    Keeps one accumulator vector per axis of each parameter (``mu[leaf][i]``
    has shape ``(leaf.shape[i],)``) instead of a full second moment. At each
    step the per-element accumulator is :math:`\nu = (1-\beta_2) g^2 + \beta_2
    \min_i \mu_i` (broadcast over axes; :math:`1-\beta_2` is replaced by 1 when
    :math:`\beta_2=1`, the paper's plain sum), the preconditioned gradient is
    :math:`g/\sqrt{\nu+\epsilon}` (0 where :math:`\nu=0`), its EMA with decay
    :math:`\beta_1` is the update, and :math:`\mu_i` becomes the max of
    :math:`\nu` over the other axes.

    Returns:
        State ``ScaleBySM3State(mu, nu)``.

    Raises:
        ValueError: at init, for complex or 0-d parameters (a scalar has no
            axis to keep an accumulator for; optax fails on them too).
    """

    def init_fn(params):
        _reject_complex(params, 'scale_by_sm3')
        scalars = [p.shape for p in tree_util.tree_leaves(params) if jnp.ndim(p) == 0]
        if scalars:
            raise ValueError('scale_by_sm3: every parameter needs at least one axis; got '
                             f'{len(scalars)} 0-d parameter(s).')
        mu = tree_util.tree_map(
            lambda p: [jnp.zeros((p.shape[i],), p.dtype) for i in range(p.ndim)], params)
        return ScaleBySM3State(mu=mu, nu=tree_zeros_like(params))

    def accumulate(g, per_axis):
        c0 = 1.0 - b2 if b2 != 1.0 else 1.0
        if g.ndim < 2:
            return c0 * g ** 2 + b2 * per_axis[0]
        expanded = [jnp.reshape(v, [1] * i + [g.shape[i]] + [1] * (g.ndim - i - 1))
                    for i, v in enumerate(per_axis)]
        return c0 * g ** 2 + b2 * functools.reduce(jnp.minimum, expanded)

    def new_mu(acc):
        if acc.ndim < 2:
            return [acc for _ in range(acc.ndim)]
        return [jnp.max(acc, axis=tuple(j for j in range(acc.ndim) if j != i))
                for i in range(acc.ndim)]

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = tree_util.tree_flatten(updates)
        mu_leaves = treedef.flatten_up_to(state.mu)
        accs = [accumulate(g, m) for g, m in zip(leaves, mu_leaves)]
        pre = [g * jnp.where(a > 0, lax.rsqrt(a + eps), 0.0) for g, a in zip(leaves, accs)]
        nu = tree_update_moment(tree_util.tree_unflatten(treedef, pre), state.nu, b1, 1)
        mu = tree_util.tree_unflatten(treedef, [new_mu(a) for a in accs])
        return nu, ScaleBySM3State(mu=mu, nu=nu)

    return GradientTransformation(init_fn, update_fn)
