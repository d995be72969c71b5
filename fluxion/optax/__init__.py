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

from . import losses as losses
from . import schedules as schedules
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
from ._clipping import clip as clip
from ._clipping import clip_by_block_rms as clip_by_block_rms
from ._clipping import clip_by_global_norm as clip_by_global_norm
from ._clipping import global_norm as global_norm
from ._combine import MultiTransformState as MultiTransformState
from ._combine import PartitionState as PartitionState
from ._combine import chain as chain
from ._combine import multi_transform as multi_transform
from ._combine import named_chain as named_chain
from ._combine import partition as partition
from ._factorized import FactoredState as FactoredState
from ._factorized import scale_by_factored_rms as scale_by_factored_rms
from ._inject import InjectHyperparamsState as InjectHyperparamsState
from ._inject import InjectStatefulHyperparamsState as InjectStatefulHyperparamsState
from ._inject import WrappedSchedule as WrappedSchedule
from ._inject import inject_hyperparams as inject_hyperparams
from ._loss import huber_loss as huber_loss
from ._loss import l2_loss as l2_loss
from ._loss import log_cosh as log_cosh
from ._loss import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from ._loss import smooth_labels as smooth_labels
from ._loss import softmax_cross_entropy as softmax_cross_entropy
from ._loss import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from ._loss import squared_error as squared_error
from ._masking import MaskedNode as MaskedNode
from ._masking import MaskedState as MaskedState
from ._masking import masked as masked
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
from ._transform import ScaleByAdamState as ScaleByAdamState
from ._transform import ScaleByLionState as ScaleByLionState
from ._transform import ScaleByRmsState as ScaleByRmsState
from ._transform import ScaleByRmsWithCountState as ScaleByRmsWithCountState
from ._transform import ScaleByRssState as ScaleByRssState
from ._transform import ScaleByRStdDevState as ScaleByRStdDevState
from ._transform import ScaleByRStdDevWithCountState as ScaleByRStdDevWithCountState
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

# Aliases for the states of stateless transformations (as in optax).
AddDecayedWeightsState = EmptyState
ClipState = EmptyState
ClipByGlobalNormState = EmptyState
ScaleState = EmptyState
ScaleByTrustRatioState = EmptyState
