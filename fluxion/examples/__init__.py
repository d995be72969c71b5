"""Runnable examples: `python -m fluxion.examples.mnist`, `.dqn_catch`, `.ppo_cartpole`, `.lstm_shakespeare`."""
