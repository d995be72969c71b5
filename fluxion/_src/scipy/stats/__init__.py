"""The implementation behind `fluxion.scipy.stats`: continuous, discrete and multivariate distributions, and the
descriptive statistics `mode`, `rankdata` and `sem`."""
