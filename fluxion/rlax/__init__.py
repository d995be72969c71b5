"""`fluxion.rlax`: reinforcement-learning building blocks (mirrors `rlax`).

Pure, unbatched functions of one transition or one trajectory with RLax's argument names
(`q_tm1, a_tm1, r_t, discount_t, q_t`, ...), rank/dtype checks at the top, and `stop_gradient` on targets where
RLax applies it. Batch them with `fluxion.vmap`::

    td_error = fluxion.vmap(rlax.q_learning)(q_tm1, a_tm1, r_t, discount_t, q_t)
    loss = jnp.mean(rlax.l2_loss(td_error))
"""

from ._checks import RLaxInputError as RLaxInputError
from ._distributions import DiscreteDistribution as DiscreteDistribution
from ._distributions import categorical_kl_divergence as categorical_kl_divergence
from ._distributions import categorical_sample as categorical_sample
from ._distributions import epsilon_greedy as epsilon_greedy
from ._distributions import greedy as greedy
from ._distributions import softmax as softmax
from ._losses import huber_loss as huber_loss
from ._losses import l2_loss as l2_loss
from ._multistep import discounted_returns as discounted_returns
from ._multistep import lambda_returns as lambda_returns
from ._multistep import n_step_bootstrapped_returns as n_step_bootstrapped_returns
from ._policy_gradients import entropy_loss as entropy_loss
from ._policy_gradients import policy_gradient_loss as policy_gradient_loss
from ._updates import conditional_update as conditional_update
from ._updates import periodic_update as periodic_update
from ._value_learning import double_q_learning as double_q_learning
from ._value_learning import expected_sarsa as expected_sarsa
from ._value_learning import q_learning as q_learning
from ._value_learning import sarsa as sarsa
from ._value_learning import td_lambda as td_lambda
from ._value_learning import td_learning as td_learning
from ._vtrace import vtrace as vtrace
