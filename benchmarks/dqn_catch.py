"""DQN-on-Catch workload: the agent of `fluxion.examples.dqn_catch` on fluxion and on real JAX + Haiku + RLax +
Optax (the same training code, only the libraries differ).

    python -m benchmarks.dqn_catch                 # episodes/s for both frameworks (each in this process)

`seconds_per_episode(framework)` is the `benchmarks/run.py` workload body (register it with scale 1e3 to report
milliseconds per episode). Timing excludes the first `warmup` episodes (tracing/compilation and the replay
warm-up); `episodes_per_second` reports the steady-state rate.
"""

from __future__ import annotations

import sys
import warnings


def _libs(framework: str):
    from fluxion.examples import dqn_catch
    if framework == "fluxion":
        return dqn_catch.fluxion_libs()
    if framework == "jax":
        import haiku as hk  # noqa: F401  (ModuleNotFoundError -> reported as "not installed" by run.py)
        import jax
        import jax.numpy as jnp
        import optax
        import rlax
        return dqn_catch.Libs(jax, jnp, hk, rlax, optax)
    raise ValueError(f"unknown framework {framework!r}; expected 'fluxion' or 'jax'")


def episode_times(framework: str, episodes: int = 300, warmup: int = 30, seed: int = 0) -> dict:
    """Trains `warmup + episodes` episodes; returns steady-state timing and the final mean return."""
    from fluxion.examples import dqn_catch
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # RLax's distribution deprecation notices
    result = dqn_catch.train(dqn_catch.Config(episodes=warmup + episodes, seed=seed), libs=_libs(framework),
                             progress=False)
    ends = result["episode_end_times"]
    steady = ends[-1] - ends[warmup - 1]
    return dict(seconds_per_episode=steady / episodes, episodes_per_second=episodes / steady,
                total_wall_time=result["wall_time"], mean_return_last_100=result["mean_return_last_100"])


def seconds_per_episode(framework: str, episodes: int = 300) -> float:
    """`benchmarks/run.py` workload body: steady-state seconds per training episode."""
    return episode_times(framework, episodes=episodes)["seconds_per_episode"]


def main(argv=None) -> None:
    episodes = int((argv or sys.argv[1:] or [300])[0])
    for framework in ("fluxion", "jax"):
        try:
            t = episode_times(framework, episodes=episodes)
        except ModuleNotFoundError as e:
            print(f"{framework:8s} not installed ({e.name})")
            continue
        print(f"{framework:8s} {t['episodes_per_second']:7.1f} episodes/s  ({1e3 * t['seconds_per_episode']:.1f} "
              f"ms/episode, total {t['total_wall_time']:.1f} s, mean return last 100 "
              f"{t['mean_return_last_100']:+.2f})")


if __name__ == "__main__":
    main()
