"""The functional core of fluxion.flax (mirrors ``flax.core``): scopes and frozen dicts."""

from . import lift as lift
from . import meta as meta
from .frozen_dict import FrozenDict as FrozenDict
from .frozen_dict import copy as copy
from .frozen_dict import freeze as freeze
from .frozen_dict import pop as pop
from .frozen_dict import pretty_repr as pretty_repr
from .frozen_dict import unfreeze as unfreeze
from .scope import DenyList as DenyList
from .scope import Scope as Scope
from .scope import Variable as Variable
from .scope import apply as apply
from .scope import bind as bind
from .scope import in_filter as in_filter
from .scope import init as init
