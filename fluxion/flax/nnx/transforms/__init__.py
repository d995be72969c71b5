"""NNX transforms: fluxion's transforms lifted to object graphs (mirrors ``flax.nnx.transforms``)."""
