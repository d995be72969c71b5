"""Short names for the pytree helpers, mirroring ``optax.tree``.

``fluxion.optax.tree.add`` is ``fluxion.optax.tree_utils.tree_add`` etc.
"""

from ._state_utils import tree_get as get
from ._state_utils import tree_get_all_with_path as get_all_with_path
from ._state_utils import tree_map_params as map_params
from ._state_utils import tree_set as set  # noqa: A004
from ._tree_math import tree_add as add
from ._tree_math import tree_add_scale as add_scale
from ._tree_math import tree_allclose as allclose
from ._tree_math import tree_batch_shape as batch_shape
from ._tree_math import tree_bias_correction as bias_correction
from ._tree_math import tree_cast as cast
from ._tree_math import tree_cast_like as cast_like
from ._tree_math import tree_clip as clip
from ._tree_math import tree_conj as conj
from ._tree_math import tree_div as div
from ._tree_math import tree_dtype as dtype
from ._tree_math import tree_full_like as full_like
from ._tree_math import tree_max as max  # noqa: A004
from ._tree_math import tree_min as min  # noqa: A004
from ._tree_math import tree_mul as mul
from ._tree_math import tree_norm as norm
from ._tree_math import tree_ones_like as ones_like
from ._tree_math import tree_real as real
from ._tree_math import tree_scale as scale
from ._tree_math import tree_size as size
from ._tree_math import tree_sub as sub
from ._tree_math import tree_sum as sum  # noqa: A004
from ._tree_math import tree_update_infinity_moment as update_infinity_moment
from ._tree_math import tree_update_moment as update_moment
from ._tree_math import tree_update_moment_per_elem_norm as update_moment_per_elem_norm
from ._tree_math import tree_vdot as vdot
from ._tree_math import tree_where as where
from ._tree_math import tree_zeros_like as zeros_like
from ._tree_random import tree_random_like as random_like
from ._tree_random import tree_split_key_like as split_key_like
from ._tree_random import tree_unwrap_random_key_data as unwrap_random_key_data
