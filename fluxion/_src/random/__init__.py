"""PRNG implementation: the Threefry-2x32 primitive, key handling (`prng`) and samplers (`distributions`)."""
