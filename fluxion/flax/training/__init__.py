"""Training utilities mirroring ``flax.training`` (train state, checkpoints)."""

from . import checkpoints as checkpoints
from . import train_state as train_state
