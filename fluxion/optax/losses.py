"""Loss functions, mirroring ``optax.losses`` (also exported from fluxion.optax)."""

from ._loss import huber_loss as huber_loss
from ._loss import l2_loss as l2_loss
from ._loss import log_cosh as log_cosh
from ._loss import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from ._loss import smooth_labels as smooth_labels
from ._loss import softmax_cross_entropy as softmax_cross_entropy
from ._loss import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from ._loss import squared_error as squared_error
