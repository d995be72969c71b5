"""``nnx.graphlib``: the graph API under Flax's module name, gathered from fluxion's graph, contexts and
graph_tools modules (the functions live there; this module only names them together)."""

from .contexts import MergeContext as MergeContext
from .contexts import SplitContext as SplitContext
from .contexts import UpdateContext as UpdateContext
from .contexts import current_update_context as current_update_context
from .contexts import merge_context as merge_context
from .contexts import split_context as split_context
from .contexts import update_context as update_context
from .graph import GraphDef as GraphDef
from .graph import GraphState as GraphState
from .graph import TreeNodeDef as TreeNodeDef
from .graph import PureState as PureState
from .graph import RefMap as RefMap
from .graph import call as call
from .graph import clone as clone
from .graph import find_duplicates as find_duplicates
from .graph import flatten as flatten
from .graph import graphdef as graphdef
from .graph import is_graph_node as is_graph_node
from .graph import is_node as is_node
from .graph import iter_graph as iter_graph
from .graph import map as map  # noqa: A004
from .graph import merge as merge
from .graph import pop as pop
from .graph import set_metadata as set_metadata
from .graph import split as split
from .graph import state as state
from .graph import unflatten as unflatten
from .graph import unpack as unpack
from .graph import update as update
from .graph import variables as variables
from .graph_tools import as_pure as as_pure
from .jit_partial import cached_partial as cached_partial
from .modes import set_graph_mode as set_graph_mode
from .modes import set_graph_updates as set_graph_updates
from .graph_tools import pure as pure
from .graph_tools import recursive_map as recursive_map
