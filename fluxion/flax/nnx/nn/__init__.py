"""NNX layers (mirrors ``flax.nnx.nn``)."""
