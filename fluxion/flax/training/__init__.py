"""Training utilities mirroring ``flax.training``: train state, checkpoints, data-parallel helpers, early stopping,
dynamic loss scaling, learning-rate schedules and a prefetching iterator."""

from . import checkpoints as checkpoints
from . import common_utils as common_utils
from . import dynamic_scale as dynamic_scale
from . import early_stopping as early_stopping
from . import lr_schedule as lr_schedule
from . import prefetch_iterator as prefetch_iterator
from . import train_state as train_state
