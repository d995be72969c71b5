"""fluxion: composable transformations of NumPy programs (grad, jit, vmap, ...), mirroring `jax`.

`import fluxion as jax` runs JAX programs on the CPU with NumPy as the backend.
"""

__version__ = "0.1.0"

from ._src.api import (ShapeDtypeStruct as ShapeDtypeStruct, block_until_ready as block_until_ready,
                       device_get as device_get, device_put as device_put, eval_shape as eval_shape, grad as grad,
                       hessian as hessian, jacfwd as jacfwd, jacrev as jacrev, jvp as jvp, linearize as linearize,
                       make_jaxpr as make_jaxpr, value_and_grad as value_and_grad, vjp as vjp, vmap as vmap)
# The NumPy backend registers the implementations of every primitive. It is imported right after `api` and before
# `jit`: it imports lax (all primitives), whose collectives import the pmap runtime, which imports jit; jit in turn
# imports the backend package, which must therefore already be loading rather than be started by jit.
from ._src import backends as _backends  # noqa: F401
from ._src.config import config as config
from ._src.custom_derivatives import custom_jvp as custom_jvp, custom_vjp as custom_vjp
from ._src.core import Array as Array
from ._src.jit import jit as jit
from ._src.caches import clear_caches as clear_caches
from ._src.tree_util import tree_leaves as tree_leaves, tree_map as tree_map, tree_structure as tree_structure

from . import errors as errors  # noqa: E402
from . import lax as lax  # noqa: E402
from . import numpy as numpy  # noqa: E402
from . import tree as tree  # noqa: E402
from . import tree_util as tree_util  # noqa: E402
from . import dtypes as dtypes  # noqa: E402
from . import nn as nn  # noqa: E402
from . import random as random  # noqa: E402

jacobian = jacrev

# Devices, pmap and multi-process data parallelism (issue 6).
from ._src.devices import (device_count as device_count, devices as devices,  # noqa: E402
                           local_device_count as local_device_count, local_devices as local_devices,
                           process_count as process_count, process_index as process_index)
from ._src.pmap import (device_put_replicated as device_put_replicated,  # noqa: E402
                        device_put_sharded as device_put_sharded, pmap as pmap)
from . import distributed as distributed  # noqa: E402
