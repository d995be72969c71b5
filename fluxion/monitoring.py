"""`fluxion.monitoring` (mirrors `jax.monitoring`): listeners for named events, durations, time spans and scalars;
fluxion records its compile steps under JAX's event names."""

from ._src.monitoring import (clear_event_listeners as clear_event_listeners, record_event as record_event,
                              record_event_duration_secs as record_event_duration_secs,
                              record_event_time_span as record_event_time_span, record_scalar as record_scalar,
                              register_event_duration_secs_listener as register_event_duration_secs_listener,
                              register_event_listener as register_event_listener,
                              register_event_time_span_listener as register_event_time_span_listener,
                              register_scalar_listener as register_scalar_listener,
                              unregister_event_duration_listener as unregister_event_duration_listener,
                              unregister_event_listener as unregister_event_listener,
                              unregister_event_time_span_listener as unregister_event_time_span_listener,
                              unregister_scalar_listener as unregister_scalar_listener)

__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_duration_secs_listener", "register_event_listener",
           "register_event_time_span_listener", "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener", "unregister_scalar_listener"]
