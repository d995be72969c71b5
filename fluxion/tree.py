"""`fluxion.tree`: the short names of the pytree utilities (`fluxion.tree.map`, mirrors `jax.tree`)."""

from ._src.tree_util import (tree_all as all, tree_flatten as flatten, tree_flatten_with_path as flatten_with_path,  # noqa: A004
                             tree_leaves as leaves, tree_leaves_with_path as leaves_with_path, tree_map as map,
                             tree_map_with_path as map_with_path, tree_reduce as reduce, tree_structure as structure,
                             tree_transpose as transpose, tree_unflatten as unflatten)
from ._src.tree_util import (static as static, tree_broadcast as broadcast,
                             tree_reduce_associative as reduce_associative)
