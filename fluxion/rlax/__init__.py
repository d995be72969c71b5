"""`fluxion.rlax`: reinforcement-learning building blocks (mirrors `rlax` 0.1.9).

Pure, unbatched functions of one transition or one trajectory with RLax's argument names
(`q_tm1, a_tm1, r_t, discount_t, q_t`, ...), rank/dtype checks at the top, and `stop_gradient` on targets where
RLax applies it. Batch them with `fluxion.vmap`::

    td_error = fluxion.vmap(rlax.q_learning)(q_tm1, a_tm1, r_t, discount_t, q_t)
    loss = jnp.mean(rlax.l2_loss(td_error))

Families: value learning (`_value_learning`), multistep returns (`_multistep`), V-trace (`_vtrace`), policy
gradients (`_policy_gradients`), MPO/V-MPO (`_mpo`), PopArt (`_pop_art`), value transforms and transformed
Bellman targets (`_transforms`, `_nonlinear_bellman`), distributions and exploration, auxiliary tasks, and tree
helpers. Every public name of rlax 0.1.9 is provided.
"""

from ._base import AllSum as AllSum
from ._base import batched_index as batched_index
from ._base import lhs_broadcast as lhs_broadcast
from ._base import one_hot as one_hot
from ._base import replace_masked as replace_masked
from ._checks import RLaxInputError as RLaxInputError
from ._clipping import clip_gradient as clip_gradient
from ._distributions import ContinuousDistribution as ContinuousDistribution
from ._distributions import DiscreteDistribution as DiscreteDistribution
from ._distributions import categorical_cross_entropy as categorical_cross_entropy
from ._distributions import categorical_importance_sampling_ratios as categorical_importance_sampling_ratios
from ._distributions import categorical_kl_divergence as categorical_kl_divergence
from ._distributions import categorical_sample as categorical_sample
from ._distributions import clipped_entropy_softmax as clipped_entropy_softmax
from ._distributions import epsilon_greedy as epsilon_greedy
from ._distributions import gaussian_diagonal as gaussian_diagonal
from ._distributions import greedy as greedy
from ._distributions import multivariate_normal_kl_divergence as multivariate_normal_kl_divergence
from ._distributions import softmax as softmax
from ._distributions import squashed_gaussian as squashed_gaussian
from ._embedding import embed_oar as embed_oar
from ._episodic_memory import knn_query as knn_query
from ._exploration import add_dirichlet_noise as add_dirichlet_noise
from ._exploration import add_gaussian_noise as add_gaussian_noise
from ._exploration import add_ornstein_uhlenbeck_noise as add_ornstein_uhlenbeck_noise
from ._exploration import episodic_memory_intrinsic_rewards as episodic_memory_intrinsic_rewards
from ._general_value_functions import feature_control_rewards as feature_control_rewards
from ._general_value_functions import pixel_control_rewards as pixel_control_rewards
from ._interruptions import fix_step_type_on_interruptions as fix_step_type_on_interruptions
from ._losses import expectile_loss as expectile_loss
from ._losses import huber_loss as huber_loss
from ._losses import l2_loss as l2_loss
from ._losses import likelihood as likelihood
from ._losses import log_loss as log_loss
from ._model_learning import extract_subsequences as extract_subsequences
from ._model_learning import sample_start_indices as sample_start_indices
from ._moving_averages import EmaMoments as EmaMoments
from ._moving_averages import EmaState as EmaState
from ._moving_averages import create_ema as create_ema
from ._mpo import LagrangePenalty as LagrangePenalty
from ._mpo import compute_parametric_kl_penalty_and_dual_loss as compute_parametric_kl_penalty_and_dual_loss
from ._mpo import mpo_compute_weights_and_temperature_loss as mpo_compute_weights_and_temperature_loss
from ._mpo import mpo_loss as mpo_loss
from ._mpo import vmpo_compute_weights_and_temperature_loss as vmpo_compute_weights_and_temperature_loss
from ._mpo import vmpo_loss as vmpo_loss
from ._multistep import discounted_returns as discounted_returns
from ._multistep import general_off_policy_returns_from_action_values as general_off_policy_returns_from_action_values
from ._multistep import general_off_policy_returns_from_q_and_v as general_off_policy_returns_from_q_and_v
from ._multistep import lambda_returns as lambda_returns
from ._multistep import n_step_bootstrapped_returns as n_step_bootstrapped_returns
from ._multistep import truncated_generalized_advantage_estimation as truncated_generalized_advantage_estimation
from ._nonlinear_bellman import DISCOUNT_TRANSFORM_PAIR as DISCOUNT_TRANSFORM_PAIR
from ._nonlinear_bellman import HYPERBOLIC_SIN_PAIR as HYPERBOLIC_SIN_PAIR
from ._nonlinear_bellman import IDENTITY_PAIR as IDENTITY_PAIR
from ._nonlinear_bellman import SIGNED_HYPERBOLIC_PAIR as SIGNED_HYPERBOLIC_PAIR
from ._nonlinear_bellman import SIGNED_LOGP1_PAIR as SIGNED_LOGP1_PAIR
from ._nonlinear_bellman import TxPair as TxPair
from ._nonlinear_bellman import compose_tx as compose_tx
from ._nonlinear_bellman import muzero_pair as muzero_pair
from ._nonlinear_bellman import (
    transformed_general_off_policy_returns_from_action_values as transformed_general_off_policy_returns_from_action_values,  # noqa: E501
)
from ._nonlinear_bellman import transformed_lambda_returns as transformed_lambda_returns
from ._nonlinear_bellman import transformed_n_step_q_learning as transformed_n_step_q_learning
from ._nonlinear_bellman import transformed_n_step_returns as transformed_n_step_returns
from ._nonlinear_bellman import transformed_q_lambda as transformed_q_lambda
from ._nonlinear_bellman import transformed_retrace as transformed_retrace
from ._nonlinear_bellman import twohot_pair as twohot_pair
from ._nonlinear_bellman import unbiased_transform_pair as unbiased_transform_pair
from ._pixel_control import pixel_control_loss as pixel_control_loss
from ._policy_gradients import clipped_surrogate_pg_loss as clipped_surrogate_pg_loss
from ._policy_gradients import dpg_loss as dpg_loss
from ._policy_gradients import entropy_loss as entropy_loss
from ._policy_gradients import policy_gradient_loss as policy_gradient_loss
from ._policy_gradients import qpg_loss as qpg_loss
from ._policy_gradients import rm_loss as rm_loss
from ._policy_gradients import rpg_loss as rpg_loss
from ._policy_targets import PolicyTarget as PolicyTarget
from ._policy_targets import constant_policy_targets as constant_policy_targets
from ._policy_targets import sampled_policy_distillation_loss as sampled_policy_distillation_loss
from ._policy_targets import zero_policy_targets as zero_policy_targets
from ._pop_art import PopArtState as PopArtState
from ._pop_art import art as art
from ._pop_art import normalize as normalize
from ._pop_art import pop as pop
from ._pop_art import popart as popart
from ._pop_art import unnormalize as unnormalize
from ._pop_art import unnormalize_linear as unnormalize_linear
from ._transforms import identity as identity
from ._transforms import logit as logit
from ._transforms import power as power
from ._transforms import sigmoid as sigmoid
from ._transforms import signed_expm1 as signed_expm1
from ._transforms import signed_hyperbolic as signed_hyperbolic
from ._transforms import signed_logp1 as signed_logp1
from ._transforms import signed_parabolic as signed_parabolic
from ._transforms import transform_from_2hot as transform_from_2hot
from ._transforms import transform_to_2hot as transform_to_2hot
from ._tree_util import transpose_first_axis_to_last as transpose_first_axis_to_last
from ._tree_util import transpose_last_axis_to_first as transpose_last_axis_to_first
from ._tree_util import tree_fn as tree_fn
from ._tree_util import tree_map_zipped as tree_map_zipped
from ._tree_util import tree_replace_masked as tree_replace_masked
from ._tree_util import tree_select as tree_select
from ._tree_util import tree_split_key as tree_split_key
from ._tree_util import tree_split_leaves as tree_split_leaves
from ._updates import conditional_update as conditional_update
from ._updates import periodic_update as periodic_update
from ._value_learning import categorical_double_q_learning as categorical_double_q_learning
from ._value_learning import categorical_l2_project as categorical_l2_project
from ._value_learning import categorical_q_learning as categorical_q_learning
from ._value_learning import categorical_td_learning as categorical_td_learning
from ._value_learning import double_q_learning as double_q_learning
from ._value_learning import expected_sarsa as expected_sarsa
from ._value_learning import persistent_q_learning as persistent_q_learning
from ._value_learning import q_lambda as q_lambda
from ._value_learning import q_learning as q_learning
from ._value_learning import quantile_expected_sarsa as quantile_expected_sarsa
from ._value_learning import quantile_q_learning as quantile_q_learning
from ._value_learning import quantile_regression_loss as quantile_regression_loss
from ._value_learning import qv_learning as qv_learning
from ._value_learning import qv_max as qv_max
from ._value_learning import retrace as retrace
from ._value_learning import retrace_continuous as retrace_continuous
from ._value_learning import sarsa as sarsa
from ._value_learning import sarsa_lambda as sarsa_lambda
from ._value_learning import td_lambda as td_lambda
from ._value_learning import td_learning as td_learning
from ._vtrace import leaky_vtrace as leaky_vtrace
from ._vtrace import leaky_vtrace_td_error_and_advantage as leaky_vtrace_td_error_and_advantage
from ._vtrace import vtrace as vtrace
from ._vtrace import vtrace_td_error_and_advantage as vtrace_td_error_and_advantage
