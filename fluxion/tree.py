"""`fluxion.tree`: the short names of the pytree utilities (`fluxion.tree.map`, mirrors `jax.tree`)."""

from ._src.public_tree import (tree_all as all, tree_broadcast as broadcast, tree_flatten as flatten,  # noqa: A004
                               tree_flatten_with_path as flatten_with_path, tree_leaves as leaves,
                               tree_leaves_with_path as leaves_with_path, tree_map as map,
                               tree_map_with_path as map_with_path, tree_reduce as reduce,
                               tree_reduce_associative as reduce_associative, tree_structure as structure)
from ._src.tree_util import static as static, tree_transpose as transpose, tree_unflatten as unflatten
