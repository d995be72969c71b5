"""The Linen <-> NNX bridge (mirrors ``flax.nnx.bridge``): :class:`ToNNX` runs a Linen module as an NNX
module, :class:`ToLinen` / :func:`to_linen` run an NNX module class as a Linen module.

Not offered: Flax's experimental "bridge Module" (``bridge.Module``, ``compact``, ``Scope``,
``current_context``, ``current_module``, ``AttrPriority``, ``nnx_in_bridge_mdl``, ``linen_in_bridge_mdl``).
"""

from ..nn import initializers as initializers
from .variables import NNXMeta as NNXMeta
from .variables import with_partitioning as with_partitioning
from .wrappers import Functional as Functional
from .wrappers import ToLinen as ToLinen
from .wrappers import ToNNX as ToNNX
from .wrappers import functional as functional
from .wrappers import lazy_init as lazy_init
from .wrappers import to_linen as to_linen
from . import variables as variables  # noqa: E402
from . import wrappers as wrappers  # noqa: E402
