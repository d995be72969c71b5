"""`fluxion.haiku`: Haiku-style object-oriented modules turned into pure functions (mirrors `haiku`).

    import fluxion.haiku as hk

    def forward(x):
        return hk.nets.MLP([128, 10])(x)

    net = hk.transform(forward)
    params = net.init(random.PRNGKey(0), x)      # {'mlp/~/linear_0': {'w': ..., 'b': ...}, ...}
    logits = net.apply(params, None, x)

Modules are plain Python objects that create parameters with `get_parameter`; `transform` runs the function
with the implicit parameters/state/keys held in one context object and exposes them as explicit arguments of
`init` and `apply`, which compose with `fluxion.jit`, `grad` and `vmap`. Names, shapes and random draws follow
Haiku, so the same seed gives the same parameters as Haiku on JAX.

Inside a transformed function, use the Haiku-aware transforms (`hk.vmap`, `hk.scan`, `hk.cond`, `hk.grad`, ...)
rather than the plain fluxion ones whenever the function touches parameters, state or keys: they carry that
implicit state through explicitly. Not provided: `hk.to_dot` (graphviz rendering of a JAX jaxpr).
"""

from . import config as config
from . import data_structures as data_structures
from . import experimental as experimental
from . import initializers as initializers
from . import mixed_precision as mixed_precision
from . import nets as nets
from . import pad as pad
from . import testing as testing
from ._attention import MultiHeadAttention as MultiHeadAttention
from ._base import current_name as current_name
from ._base import custom_creator as custom_creator
from ._base import custom_getter as custom_getter
from ._base import custom_setter as custom_setter
from ._base import DO_NOT_STORE as DO_NOT_STORE
from ._base import get_current_state as get_current_state
from ._base import get_initial_state as get_initial_state
from ._base import get_parameter as get_parameter
from ._base import get_params as get_params
from ._base import get_state as get_state
from ._base import GetterContext as GetterContext
from ._base import maybe_get_rng_sequence_state as maybe_get_rng_sequence_state
from ._base import maybe_next_rng_key as maybe_next_rng_key
from ._base import next_rng_key as next_rng_key
from ._base import next_rng_keys as next_rng_keys
from ._base import replace_rng_sequence_state as replace_rng_sequence_state
from ._base import reserve_rng_keys as reserve_rng_keys
from ._base import running_init as running_init
from ._base import set_state as set_state
from ._base import SetterContext as SetterContext
from ._base import with_rng as with_rng
from ._basic import BatchApply as BatchApply
from ._basic import Bias as Bias
from ._basic import dropout as dropout
from ._basic import expand_apply as expand_apply
from ._basic import Linear as Linear
from ._basic import multinomial as multinomial
from ._basic import one_hot as one_hot
from ._basic import Sequential as Sequential
from ._basic import to_module as to_module
from ._conv import Conv1D as Conv1D
from ._conv import Conv1DTranspose as Conv1DTranspose
from ._conv import Conv2D as Conv2D
from ._conv import Conv2DTranspose as Conv2DTranspose
from ._conv import Conv3D as Conv3D
from ._conv import Conv3DTranspose as Conv3DTranspose
from ._conv import ConvND as ConvND
from ._conv import ConvNDTranspose as ConvNDTranspose
from ._conv import DepthwiseConv1D as DepthwiseConv1D
from ._conv import DepthwiseConv2D as DepthwiseConv2D
from ._conv import DepthwiseConv3D as DepthwiseConv3D
from ._conv import SeparableDepthwiseConv2D as SeparableDepthwiseConv2D
from ._deferred import Deferred as Deferred
from ._frame import MissingRNGError as MissingRNGError
from ._frame import NonEmptyStateError as NonEmptyStateError
from ._layer_stack import layer_stack as layer_stack
from ._layer_stack import LayerStackTransparencyMapping as LayerStackTransparencyMapping
from ._layers import avg_pool as avg_pool
from ._layers import AvgPool as AvgPool
from ._layers import Embed as Embed
from ._layers import EmbedLookupStyle as EmbedLookupStyle
from ._layers import Flatten as Flatten
from ._layers import max_pool as max_pool
from ._layers import MaxPool as MaxPool
from ._layers import Reshape as Reshape
from ._lift import lift as lift
from ._lift import lift_with_state as lift_with_state
from ._lift import LiftWithStateUpdater as LiftWithStateUpdater
from ._lift import transparent_lift as transparent_lift
from ._lift import transparent_lift_with_state as transparent_lift_with_state
from ._module import force_name as force_name
from ._module import intercept_methods as intercept_methods
from ._module import MethodContext as MethodContext
from ._module import Module as Module
from ._module import name_like as name_like
from ._module import name_scope as name_scope
from ._module import transparent as transparent
from ._norm import BatchNorm as BatchNorm
from ._norm import EMAParamsTree as EMAParamsTree
from ._norm import ExponentialMovingAverage as ExponentialMovingAverage
from ._norm import GroupNorm as GroupNorm
from ._norm import InstanceNorm as InstanceNorm
from ._norm import LayerNorm as LayerNorm
from ._norm import RMSNorm as RMSNorm
from ._prng import PRNGSequence as PRNGSequence
from ._recurrent import Conv1DLSTM as Conv1DLSTM
from ._recurrent import Conv2DLSTM as Conv2DLSTM
from ._recurrent import Conv3DLSTM as Conv3DLSTM
from ._recurrent import deep_rnn_with_skip_connections as deep_rnn_with_skip_connections
from ._recurrent import DeepRNN as DeepRNN
from ._recurrent import dynamic_unroll as dynamic_unroll
from ._recurrent import GRU as GRU
from ._recurrent import IdentityCore as IdentityCore
from ._recurrent import LSTM as LSTM
from ._recurrent import LSTMState as LSTMState
from ._recurrent import ResetCore as ResetCore
from ._recurrent import RNNCore as RNNCore
from ._recurrent import static_unroll as static_unroll
from ._recurrent import VanillaRNN as VanillaRNN
from ._spectral_norm import SNParamsTree as SNParamsTree
from ._spectral_norm import SpectralNorm as SpectralNorm
from ._stateful import cond as cond
from ._stateful import eval_shape as eval_shape
from ._stateful import fori_loop as fori_loop
from ._stateful import grad as grad
from ._stateful import map as map
from ._stateful import remat as remat
from ._stateful import scan as scan
from ._stateful import switch as switch
from ._stateful import value_and_grad as value_and_grad
from ._stateful import vmap as vmap
from ._stateful import while_loop as while_loop
from ._transform import multi_transform as multi_transform
from ._transform import multi_transform_with_state as multi_transform_with_state
from ._transform import MultiTransformed as MultiTransformed
from ._transform import MultiTransformedWithState as MultiTransformedWithState
from ._transform import transform as transform
from ._transform import transform_with_state as transform_with_state
from ._transform import Transformed as Transformed
from ._transform import TransformedWithState as TransformedWithState
from ._transform import with_empty_state as with_empty_state
from ._transform import without_apply_rng as without_apply_rng
from ._transform import without_state as without_state
from ._typing import ModuleProtocol as ModuleProtocol
from ._typing import MutableParams as MutableParams
from ._typing import MutableState as MutableState
from ._typing import SupportsCall as SupportsCall
from ._utils import get_channel_index as get_channel_index

Params = dict
State = dict
