"""`fluxion.ops` (mirrors `jax.ops`): segment reductions."""

from ._src.numpy.segments import (segment_max as segment_max, segment_min as segment_min,
                                  segment_prod as segment_prod, segment_sum as segment_sum)
