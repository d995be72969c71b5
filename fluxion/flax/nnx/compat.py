"""``nnx.compat`` (mirrors ``flax.nnx.compat``): the graph-mode forms of the graph API and transforms.

Flax 0.12 lets most NNX functions run in a "tree mode"; its ``compat`` module
re-exports them with graph mode (and graph updates) as the default.  fluxion's
NNX always runs in graph mode with updates, so these are the ordinary
functions.  Not here yet: ``recursive_map``, ``cached_partial``, ``view_info``
and ``backup_keys`` (fluxion's NNX does not offer them).
"""

from .graph import clone as clone
from .graph import flatten as flatten
from .graph import graphdef as graphdef
from .graph import iter_graph as iter_graph
from .graph import split as split
from .graph import state as state
from .module import iter_children as iter_children
from .module import iter_modules as iter_modules
from .module import view as view
from .rngs import fork_rngs as fork_rngs
from .rngs import reseed as reseed
from .rngs import split_rngs as split_rngs
from .spmd import get_abstract_model as get_abstract_model
from .transforms.autodiff import grad as grad
from .transforms.autodiff import remat as remat
from .transforms.autodiff import value_and_grad as value_and_grad
from .transforms.checks import checkify as checkify
from .transforms.compilation import eval_shape as eval_shape
from .transforms.compilation import jit as jit
from .transforms.control import cond as cond
from .transforms.control import switch as switch
from .transforms.custom_vjp import custom_vjp as custom_vjp
from .transforms.functional import jvp as jvp
from .transforms.functional import vjp as vjp
from .transforms.iteration import fori_loop as fori_loop
from .transforms.iteration import scan as scan
from .transforms.iteration import vmap as vmap
from .transforms.iteration import while_loop as while_loop
from .transforms.parallel import pmap as pmap
from .transforms.parallel import shard_map as shard_map
