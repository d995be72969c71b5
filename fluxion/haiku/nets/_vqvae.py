"""Vector quantization layers of VQ-VAE (van den Oord et al. 2017, "Neural Discrete Representation Learning").

Inputs `[..., embedding_dim]` are replaced by their nearest codebook vector (columns of `embeddings`,
`[embedding_dim, num_embeddings]`, default init `VarianceScaling(distribution="uniform")`), with a
straight-through gradient. `VectorQuantizer` learns the codebook as a parameter (codebook + commitment loss);
`VectorQuantizerEMA` keeps it as state updated by exponential moving averages of the assigned inputs (Appendix
A.1 of the paper), in submodules `ema_cluster_size` and `ema_dw`.

Both return a dict: `quantize` (same shape as inputs), `loss`, `perplexity`, `encodings` (one-hot
`[N, num_embeddings]`), `encoding_indices` (`inputs.shape[:-1]`), `distances` (`[N, num_embeddings]`).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import lax, nn

from .. import initializers
from .._base import get_parameter, get_state, set_state
from .._module import Module
from .._norm import ExponentialMovingAverage

__all__ = ["VectorQuantizer", "VectorQuantizerEMA"]


def _codebook_init() -> Any:
    return initializers.VarianceScaling(distribution="uniform")


def _nearest(flat_inputs: Any, embeddings: Any, num_embeddings: int) -> tuple[Any, Any, Any]:
    # Squared distances via |x|^2 - 2 x.e + |e|^2, as in the reference implementation.
    distances = (jnp.sum(jnp.square(flat_inputs), 1, keepdims=True) - 2 * jnp.matmul(flat_inputs, embeddings)
                 + jnp.sum(jnp.square(embeddings), 0, keepdims=True))
    indices = jnp.argmax(-distances, 1)
    return distances, indices, nn.one_hot(indices, num_embeddings, dtype=distances.dtype)


def _outputs(inputs, quantized, loss, encodings, indices, distances, cross_replica_axis) -> dict:
    avg_probs = jnp.mean(encodings, 0)
    if cross_replica_axis:
        avg_probs = lax.pmean(avg_probs, axis_name=cross_replica_axis)
    return {"quantize": inputs + lax.stop_gradient(quantized - inputs), "loss": loss,
            "perplexity": jnp.exp(-jnp.sum(avg_probs * jnp.log(avg_probs + 1e-10))), "encodings": encodings,
            "encoding_indices": indices, "distances": distances}


class VectorQuantizer(Module):
    """Codebook as parameter `embeddings`; `loss = q_latent_loss + commitment_cost * e_latent_loss`."""

    def __init__(self, embedding_dim: int, num_embeddings: int, commitment_cost: float, dtype: Any = jnp.float32,
                 name: str | None = None, cross_replica_axis: str | None = None):
        super().__init__(name=name)
        self.embedding_dim = embedding_dim
        self.num_embeddings = num_embeddings
        self.commitment_cost = commitment_cost
        self.cross_replica_axis = cross_replica_axis
        self._embedding_shape = [embedding_dim, num_embeddings]
        self._embedding_dtype = dtype

    @property
    def embeddings(self) -> Any:
        return get_parameter("embeddings", self._embedding_shape, self._embedding_dtype, init=_codebook_init())

    def __call__(self, inputs: Any, is_training: bool) -> dict:
        del is_training  # same computation in training and evaluation
        flat = jnp.reshape(inputs, [-1, self.embedding_dim])
        distances, indices, encodings = _nearest(flat, self.embeddings, self.num_embeddings)
        indices = jnp.reshape(indices, inputs.shape[:-1])
        quantized = self.quantize(indices)
        e_latent_loss = jnp.mean(jnp.square(lax.stop_gradient(quantized) - inputs))
        q_latent_loss = jnp.mean(jnp.square(quantized - lax.stop_gradient(inputs)))
        loss = q_latent_loss + self.commitment_cost * e_latent_loss
        return _outputs(inputs, quantized, loss, encodings, indices, distances, self.cross_replica_axis)

    def quantize(self, encoding_indices: Any) -> Any:
        """The codebook vectors for `encoding_indices` (shape `indices.shape + (embedding_dim,)`)."""
        return jnp.asarray(self.embeddings).swapaxes(1, 0)[encoding_indices]


class VectorQuantizerEMA(Module):
    """Codebook as state `embeddings`, updated in training by EMAs of cluster sizes (Laplace-smoothed with
    `epsilon`) and of summed assigned inputs; `loss = commitment_cost * e_latent_loss`.

    Raises:
        ValueError: `decay` outside [0, 1].
    """

    def __init__(self, embedding_dim: int, num_embeddings: int, commitment_cost: float, decay: float,
                 epsilon: float = 1e-5, dtype: Any = jnp.float32, cross_replica_axis: str | None = None,
                 name: str | None = None):
        super().__init__(name=name)
        if not 0 <= decay <= 1:
            raise ValueError("decay must be in range [0, 1]")
        self.embedding_dim = embedding_dim
        self.num_embeddings = num_embeddings
        self.decay = decay
        self.commitment_cost = commitment_cost
        self.epsilon = epsilon
        self.cross_replica_axis = cross_replica_axis
        self._embedding_shape = [embedding_dim, num_embeddings]
        self._dtype = dtype
        self._ema_cluster_size = ExponentialMovingAverage(decay=decay, name="ema_cluster_size")
        self._ema_dw = ExponentialMovingAverage(decay=decay, name="ema_dw")

    @property
    def embeddings(self) -> Any:
        return get_state("embeddings", self._embedding_shape, self._dtype, init=_codebook_init())

    @property
    def ema_cluster_size(self) -> ExponentialMovingAverage:
        self._ema_cluster_size.initialize([self.num_embeddings], self._dtype)
        return self._ema_cluster_size

    @property
    def ema_dw(self) -> ExponentialMovingAverage:
        self._ema_dw.initialize(self._embedding_shape, self._dtype)
        return self._ema_dw

    def __call__(self, inputs: Any, is_training: bool) -> dict:
        flat = jnp.reshape(inputs, [-1, self.embedding_dim])
        distances, indices, encodings = _nearest(flat, self.embeddings, self.num_embeddings)
        indices = jnp.reshape(indices, inputs.shape[:-1])
        quantized = self.quantize(indices)
        e_latent_loss = jnp.mean(jnp.square(lax.stop_gradient(quantized) - inputs))
        if is_training:
            cluster_size = jnp.sum(encodings, axis=0)
            dw = jnp.matmul(flat.T, encodings)
            if self.cross_replica_axis:
                cluster_size = lax.psum(cluster_size, axis_name=self.cross_replica_axis)
                dw = lax.psum(dw, axis_name=self.cross_replica_axis)
            ema_cluster_size = self.ema_cluster_size(cluster_size)
            ema_dw = self.ema_dw(dw)
            n = jnp.sum(ema_cluster_size)
            ema_cluster_size = (ema_cluster_size + self.epsilon) / (n + self.num_embeddings * self.epsilon) * n
            set_state("embeddings", ema_dw / jnp.reshape(ema_cluster_size, [1, -1]))
        loss = self.commitment_cost * e_latent_loss
        return _outputs(inputs, quantized, loss, encodings, indices, distances, self.cross_replica_axis)

    def quantize(self, encoding_indices: Any) -> Any:
        """The codebook vectors for `encoding_indices` (shape `indices.shape + (embedding_dim,)`)."""
        return jnp.asarray(self.embeddings).swapaxes(1, 0)[encoding_indices]
