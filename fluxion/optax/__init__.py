"""fluxion.optax: gradient processing and optimization, mirroring optax 0.2.x.

Usage is identical to optax::

    import fluxion.optax as optax
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)

State objects have the same NamedTuple types, field names and nesting as
optax's, so ``opt_state[0].mu`` etc. work unchanged.
"""

from . import assignment as assignment
from . import contrib as contrib
from . import experimental as experimental
from . import losses as losses
from . import microbatching as microbatching
from . import perturbations as perturbations
from . import projections as projections
from . import schedules as schedules
from . import second_order as second_order
from . import transforms as transforms
from . import tree as tree
from . import tree_utils as tree_utils
from ._accumulation import EmaState as EmaState
from ._accumulation import TraceState as TraceState
from ._accumulation import ema as ema
from ._accumulation import trace as trace
from ._alias import adafactor as adafactor
from ._alias import adagrad as adagrad
from ._alias import adam as adam
from ._alias import adamw as adamw
from ._alias import lamb as lamb
from ._alias import lion as lion
from ._alias import nadam as nadam
from ._alias import nadamw as nadamw
from ._alias import rmsprop as rmsprop
from ._alias import sgd as sgd
from ._alias_variants import adabelief as adabelief
from ._alias_variants import adadelta as adadelta
from ._alias_variants import adamax as adamax
from ._alias_variants import adamaxw as adamaxw
from ._alias_variants import adan as adan
from ._alias_variants import amsgrad as amsgrad
from ._alias_variants import fromage as fromage
from ._alias_variants import lars as lars
from ._alias_variants import noisy_sgd as noisy_sgd
from ._alias_variants import novograd as novograd
from ._alias_variants import optimistic_adam as optimistic_adam
from ._alias_variants import optimistic_adam_v2 as optimistic_adam_v2
from ._alias_variants import optimistic_gradient_descent as optimistic_gradient_descent
from ._alias_variants import polyak_sgd as polyak_sgd
from ._alias_variants import radam as radam
from ._alias_variants import rprop as rprop
from ._alias_variants import sign_sgd as sign_sgd
from ._alias_variants import signum as signum
from ._alias_variants import sm3 as sm3
from ._alias_variants import yogi as yogi
from ._base import ArrayTree as ArrayTree
from ._base import EmptyState as EmptyState
from ._base import GradientTransformation as GradientTransformation
from ._base import GradientTransformationExtraArgs as GradientTransformationExtraArgs
from ._base import MaskOrFn as MaskOrFn
from ._base import OptState as OptState
from ._base import Params as Params
from ._base import PyTree as PyTree
from ._base import ScalarOrSchedule as ScalarOrSchedule
from ._base import Schedule as Schedule
from ._base import StatefulSchedule as StatefulSchedule
from ._base import TransformInitFn as TransformInitFn
from ._base import TransformUpdateExtraArgsFn as TransformUpdateExtraArgsFn
from ._base import TransformUpdateFn as TransformUpdateFn
from ._base import Updates as Updates
from ._base import identity as identity
from ._base import init_empty_state as init_empty_state
from ._base import set_to_zero as set_to_zero
from ._base import stateless as stateless
from ._base import stateless_with_tree_map as stateless_with_tree_map
from ._base import with_extra_args_support as with_extra_args_support
from ._clipping import AdaptiveGradClipState as AdaptiveGradClipState
from ._clipping import adaptive_grad_clip as adaptive_grad_clip
from ._clipping import clip as clip
from ._clipping import clip_by_block_rms as clip_by_block_rms
from ._clipping import clip_by_global_norm as clip_by_global_norm
from ._clipping import global_norm as global_norm
from ._clipping import per_example_global_norm_clip as per_example_global_norm_clip
from ._clipping import per_example_layer_norm_clip as per_example_layer_norm_clip
from ._combine import MultiTransformState as MultiTransformState
from ._combine import PartitionState as PartitionState
from ._combine import chain as chain
from ._combine import multi_transform as multi_transform
from ._combine import named_chain as named_chain
from ._combine import partition as partition
from ._factorized import FactoredState as FactoredState
from ._factorized import scale_by_factored_rms as scale_by_factored_rms
from ._grad_utils import multi_normal as multi_normal
from ._grad_utils import scale_gradient as scale_gradient
from ._inject import InjectHyperparamsState as InjectHyperparamsState
from ._inject import InjectStatefulHyperparamsState as InjectStatefulHyperparamsState
from ._inject import WrappedSchedule as WrappedSchedule
from ._inject import inject_hyperparams as inject_hyperparams
from ._inject import inject_stateful_hyperparams as inject_stateful_hyperparams
from ._lbfgs import ScaleByLBFGSState as ScaleByLBFGSState
from ._lbfgs import lbfgs as lbfgs
from ._lbfgs import scale_by_lbfgs as scale_by_lbfgs
from ._linear_algebra import matrix_inverse_pth_root as matrix_inverse_pth_root
from ._linear_algebra import nnls as nnls
from ._linear_algebra import power_iteration as power_iteration
from ._linesearch import ScaleByBacktrackingLinesearchState as ScaleByBacktrackingLinesearchState
from ._linesearch import ScaleByZoomLinesearchState as ScaleByZoomLinesearchState
from ._linesearch import ZoomLinesearchInfo as ZoomLinesearchInfo
from ._linesearch import scale_by_backtracking_linesearch as scale_by_backtracking_linesearch
from ._linesearch import scale_by_zoom_linesearch as scale_by_zoom_linesearch
from ._linesearch import value_and_grad_from_state as value_and_grad_from_state
from ._lookahead import LookaheadParams as LookaheadParams
from ._lookahead import LookaheadState as LookaheadState
from ._lookahead import lookahead as lookahead
from ._loss import huber_loss as huber_loss
from ._loss import l2_loss as l2_loss
from ._loss import log_cosh as log_cosh
from ._loss import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from ._loss import smooth_labels as smooth_labels
from ._loss import softmax_cross_entropy as softmax_cross_entropy
from ._loss import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from ._loss import squared_error as squared_error
from ._loss_ctc import ctc_loss as ctc_loss
from ._loss_ctc import ctc_loss_with_forward_probs as ctc_loss_with_forward_probs
from ._loss_more import convex_kl_divergence as convex_kl_divergence
from ._loss_more import cosine_distance as cosine_distance
from ._loss_more import cosine_similarity as cosine_similarity
from ._loss_more import generalized_kl_divergence as generalized_kl_divergence
from ._loss_more import hinge_loss as hinge_loss
from ._loss_more import kl_divergence as kl_divergence
from ._loss_more import ntxent as ntxent
from ._loss_more import safe_softmax_cross_entropy as safe_softmax_cross_entropy
from ._loss_more import sigmoid_focal_loss as sigmoid_focal_loss
from ._masking import MaskedNode as MaskedNode
from ._masking import MaskedState as MaskedState
from ._masking import masked as masked
from ._microbatching import microbatch as microbatch
from ._moments import ScaleByAdaDeltaState as ScaleByAdaDeltaState
from ._moments import ScaleByAdanState as ScaleByAdanState
from ._moments import ScaleByAmsgradState as ScaleByAmsgradState
from ._moments import ScaleByBeliefState as ScaleByBeliefState
from ._moments import ScaleByNovogradState as ScaleByNovogradState
from ._moments import ScaleBySM3State as ScaleBySM3State
from ._moments import scale_by_adadelta as scale_by_adadelta
from ._moments import scale_by_adamax as scale_by_adamax
from ._moments import scale_by_adan as scale_by_adan
from ._moments import scale_by_amsgrad as scale_by_amsgrad
from ._moments import scale_by_belief as scale_by_belief
from ._moments import scale_by_novograd as scale_by_novograd
from ._moments import scale_by_radam as scale_by_radam
from ._moments import scale_by_sm3 as scale_by_sm3
from ._moments import scale_by_yogi as scale_by_yogi
from ._monitoring import MonitorState as MonitorState
from ._monitoring import SnapshotState as SnapshotState
from ._monitoring import measure_with_ema as measure_with_ema
from ._monitoring import monitor as monitor
from ._monitoring import snapshot as snapshot
from ._multi_steps import MultiSteps as MultiSteps
from ._multi_steps import MultiStepsState as MultiStepsState
from ._multi_steps import ShouldSkipUpdateFunction as ShouldSkipUpdateFunction
from ._multi_steps import skip_large_updates as skip_large_updates
from ._multi_steps import skip_not_finite as skip_not_finite
from ._numerics import safe_increment as safe_increment
from ._numerics import safe_int32_increment as safe_int32_increment
from ._numerics import safe_norm as safe_norm
from ._numerics import safe_root_mean_squares as safe_root_mean_squares
from ._schedule import constant_schedule as constant_schedule
from ._schedule import cosine_decay_schedule as cosine_decay_schedule
from ._schedule import exponential_decay as exponential_decay
from ._schedule import join_schedules as join_schedules
from ._schedule import linear_schedule as linear_schedule
from ._schedule import piecewise_constant_schedule as piecewise_constant_schedule
from ._schedule import polynomial_schedule as polynomial_schedule
from ._schedule import sgdr_schedule as sgdr_schedule
from ._schedule import warmup_constant_schedule as warmup_constant_schedule
from ._schedule import warmup_cosine_decay_schedule as warmup_cosine_decay_schedule
from ._schedule import warmup_exponential_decay_schedule as warmup_exponential_decay_schedule
from ._schedule_onecycle import cosine_onecycle_schedule as cosine_onecycle_schedule
from ._schedule_onecycle import linear_onecycle_schedule as linear_onecycle_schedule
from ._schedule_onecycle import piecewise_interpolate_schedule as piecewise_interpolate_schedule
from ._state_utils import tree_map_params as tree_map_params
from ._stepsize import ApplyEvery as ApplyEvery
from ._stepsize import ScaleByRpropState as ScaleByRpropState
from ._stepsize import apply_every as apply_every
from ._stepsize import centralize as centralize
from ._stepsize import normalize_by_update_norm as normalize_by_update_norm
from ._stepsize import scale_by_distance_over_gradients as scale_by_distance_over_gradients
from ._stepsize import scale_by_optimistic_gradient as scale_by_optimistic_gradient
from ._stepsize import scale_by_polyak as scale_by_polyak
from ._stepsize import scale_by_rprop as scale_by_rprop
from ._transform import ScaleByAdamState as ScaleByAdamState
from ._transform import ScaleByLionState as ScaleByLionState
from ._transform import ScaleByRStdDevState as ScaleByRStdDevState
from ._transform import ScaleByRStdDevWithCountState as ScaleByRStdDevWithCountState
from ._transform import ScaleByRmsState as ScaleByRmsState
from ._transform import ScaleByRmsWithCountState as ScaleByRmsWithCountState
from ._transform import ScaleByRssState as ScaleByRssState
from ._transform import ScaleByScheduleState as ScaleByScheduleState
from ._transform import WeightDecaySchedule as WeightDecaySchedule
from ._transform import add_decayed_weights as add_decayed_weights
from ._transform import scale as scale
from ._transform import scale_by_adam as scale_by_adam
from ._transform import scale_by_learning_rate as scale_by_learning_rate
from ._transform import scale_by_lion as scale_by_lion
from ._transform import scale_by_param_block_norm as scale_by_param_block_norm
from ._transform import scale_by_param_block_rms as scale_by_param_block_rms
from ._transform import scale_by_rms as scale_by_rms
from ._transform import scale_by_rss as scale_by_rss
from ._transform import scale_by_schedule as scale_by_schedule
from ._transform import scale_by_sign as scale_by_sign
from ._transform import scale_by_stddev as scale_by_stddev
from ._transform import scale_by_trust_ratio as scale_by_trust_ratio
from ._tree_math import tree_bias_correction as bias_correction
from ._tree_math import tree_update_infinity_moment as update_infinity_moment
from ._tree_math import tree_update_moment as update_moment
from ._tree_math import tree_update_moment_per_elem_norm as update_moment_per_elem_norm
from ._update import apply_updates as apply_updates
from ._update import incremental_update as incremental_update
from ._update import periodic_update as periodic_update
from ._wrappers import AddNoiseState as AddNoiseState
from ._wrappers import ApplyIfFiniteState as ApplyIfFiniteState
from ._wrappers import ConditionallyMaskState as ConditionallyMaskState
from ._wrappers import ConditionallyTransformState as ConditionallyTransformState
from ._wrappers import NonNegativeParamsState as NonNegativeParamsState
from ._wrappers import ZeroNansState as ZeroNansState
from ._wrappers import add_noise as add_noise
from ._wrappers import apply_if_finite as apply_if_finite
from ._wrappers import conditionally_mask as conditionally_mask
from ._wrappers import conditionally_transform as conditionally_transform
from ._wrappers import flatten as flatten
from ._wrappers import freeze as freeze
from ._wrappers import keep_params_nonnegative as keep_params_nonnegative
from ._wrappers import selective_transform as selective_transform
from ._wrappers import zero_nans as zero_nans

# Aliases for the states of stateless transformations (as in optax).
AddDecayedWeightsState = EmptyState
ClipState = EmptyState
ClipByGlobalNormState = EmptyState
ScaleState = EmptyState
ScaleByTrustRatioState = EmptyState

# Names optax 0.2.8 still answers at the top level with a DeprecationWarning, pointing to `optax.contrib`.
_MOVED_TO_CONTRIB = ("dpsgd", "differentially_private_aggregate", "DifferentiallyPrivateAggregateState")


def __getattr__(name: str):
    if name in _MOVED_TO_CONTRIB:
        import warnings

        from . import contrib
        warnings.warn(f"optax.{name} is deprecated: use optax.contrib.{name} (optax v0.1.8 or newer).",
                      DeprecationWarning, stacklevel=2)
        return getattr(contrib, name)
    raise AttributeError(f"module 'fluxion.optax' has no attribute {name!r}")
