"""Flax-compatible neural-network library built on fluxion (``fluxion.flax`` mirrors ``flax``).

``from fluxion.flax import linen as nn`` gives the Linen module API;
``fluxion.flax.training.train_state.TrainState`` bundles parameters and an
optimizer; ``struct``, ``serialization`` and ``training.checkpoints`` mirror
their Flax namesakes.
"""

from . import core as core
from . import errors as errors
from . import jax_utils as jax_utils
from . import linen as linen
from . import serialization as serialization
from . import struct as struct
from . import traverse_util as traverse_util
