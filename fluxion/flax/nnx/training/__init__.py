"""NNX training utilities: Optimizer and metrics (mirrors ``flax.nnx.training``)."""
