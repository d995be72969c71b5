"""`fluxion.ad_checkpoint` (mirrors `jax.ad_checkpoint`)."""

from ._src.checkpoint import (checkpoint as checkpoint, checkpoint_name as checkpoint_name,
                              checkpoint_policies as checkpoint_policies,
                              print_saved_residuals as print_saved_residuals, remat as remat,
                              saved_residuals as saved_residuals)
