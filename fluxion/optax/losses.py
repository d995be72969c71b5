"""Loss functions, mirroring ``optax.losses`` (also exported from fluxion.optax)."""

from ._loss import huber_loss as huber_loss
from ._loss import l2_loss as l2_loss
from ._loss import log_cosh as log_cosh
from ._loss import sigmoid_binary_cross_entropy as sigmoid_binary_cross_entropy
from ._loss import smooth_labels as smooth_labels
from ._loss import softmax_cross_entropy as softmax_cross_entropy
from ._loss import softmax_cross_entropy_with_integer_labels as softmax_cross_entropy_with_integer_labels
from ._loss import squared_error as squared_error
from ._loss_more import convex_kl_divergence as convex_kl_divergence
from ._loss_more import cosine_distance as cosine_distance
from ._loss_more import cosine_similarity as cosine_similarity
from ._loss_more import generalized_kl_divergence as generalized_kl_divergence
from ._loss_more import hinge_loss as hinge_loss
from ._loss_more import kl_divergence as kl_divergence
from ._loss_more import kl_divergence_with_log_targets as kl_divergence_with_log_targets
from ._loss_more import multiclass_hinge_loss as multiclass_hinge_loss
from ._loss_more import multiclass_perceptron_loss as multiclass_perceptron_loss
from ._loss_more import ntxent as ntxent
from ._loss_more import perceptron_loss as perceptron_loss
from ._loss_more import poly_loss_cross_entropy as poly_loss_cross_entropy
from ._loss_more import safe_softmax_cross_entropy as safe_softmax_cross_entropy
from ._loss_more import sigmoid_focal_loss as sigmoid_focal_loss
from ._loss_more import sparsemax_loss as sparsemax_loss
from ._loss_more import triplet_margin_loss as triplet_margin_loss
