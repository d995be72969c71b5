"""fluxion.clu: Common Loop Utilities (the parts used by the Flax examples).

Only ``fluxion.clu.parameter_overview`` is provided.
"""

from . import parameter_overview as parameter_overview
