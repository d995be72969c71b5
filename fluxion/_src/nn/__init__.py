"""Neural-network helpers: activation functions (`functions`) and parameter initializers (`initializers`)."""
