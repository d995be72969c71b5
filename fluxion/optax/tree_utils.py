"""Pytree arithmetic helpers, mirroring ``optax.tree_utils``.

``tree_scalar_mul``, ``tree_add_scalar_mul``, ``tree_l1_norm``,
``tree_l2_norm`` and ``tree_linf_norm`` are the older optax names of
``tree_scale``, ``tree_add_scale`` and ``tree_norm``.
"""

from ._state_utils import NamedTupleKey as NamedTupleKey
from ._state_utils import tree_get as tree_get
from ._state_utils import tree_get_all_with_path as tree_get_all_with_path
from ._state_utils import tree_map_params as tree_map_params
from ._state_utils import tree_set as tree_set
from ._tree_math import tree_add as tree_add
from ._tree_math import tree_add_scale as tree_add_scale
from ._tree_math import tree_allclose as tree_allclose
from ._tree_math import tree_batch_shape as tree_batch_shape
from ._tree_math import tree_bias_correction as tree_bias_correction
from ._tree_math import tree_cast as tree_cast
from ._tree_math import tree_cast_like as tree_cast_like
from ._tree_math import tree_clip as tree_clip
from ._tree_math import tree_conj as tree_conj
from ._tree_math import tree_div as tree_div
from ._tree_math import tree_dtype as tree_dtype
from ._tree_math import tree_full_like as tree_full_like
from ._tree_math import tree_l1_norm as tree_l1_norm
from ._tree_math import tree_l2_norm as tree_l2_norm
from ._tree_math import tree_linf_norm as tree_linf_norm
from ._tree_math import tree_max as tree_max
from ._tree_math import tree_min as tree_min
from ._tree_math import tree_mul as tree_mul
from ._tree_math import tree_norm as tree_norm
from ._tree_math import tree_ones_like as tree_ones_like
from ._tree_math import tree_real as tree_real
from ._tree_math import tree_scale as tree_scale
from ._tree_math import tree_size as tree_size
from ._tree_math import tree_sub as tree_sub
from ._tree_math import tree_sum as tree_sum
from ._tree_math import tree_update_infinity_moment as tree_update_infinity_moment
from ._tree_math import tree_update_moment as tree_update_moment
from ._tree_math import tree_update_moment_per_elem_norm as tree_update_moment_per_elem_norm
from ._tree_math import tree_vdot as tree_vdot
from ._tree_math import tree_where as tree_where
from ._tree_math import tree_zeros_like as tree_zeros_like
from ._tree_random import tree_random_like as tree_random_like
from ._tree_random import tree_split_key_like as tree_split_key_like
from ._tree_random import tree_unwrap_random_key_data as tree_unwrap_random_key_data

# Older optax names.
tree_scalar_mul = tree_scale
tree_add_scalar_mul = tree_add_scale
