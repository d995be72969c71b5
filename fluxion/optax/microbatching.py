"""Microbatched evaluation, mirroring ``optax.microbatching``."""

from ._microbatching import AccumulationType as AccumulationType
from ._microbatching import Accumulator as Accumulator
from ._microbatching import micro_grad as micro_grad
from ._microbatching import micro_vmap as micro_vmap
from ._microbatching import microbatch as microbatch
from ._microbatching import reshape_batch_axis as reshape_batch_axis
