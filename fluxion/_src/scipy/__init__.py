"""The implementation behind `fluxion.scipy` (mirrors `jax.scipy`); the public names live in `fluxion/scipy/`."""
