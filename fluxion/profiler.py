"""`fluxion.profiler` (mirrors `jax.profiler`): traces of compiles, executions and annotated spans, written as
Chrome trace-event files (Perfetto, chrome://tracing, TensorBoard).

Not here: `start_server`/`stop_server`/`register_subprocess` (a gRPC profiler server for remote capture) and
`ProfileData`/`ProfileEvent`/`ProfilePlane` (readers of XLA's xplane protobuf, which fluxion does not produce).
"""

from ._src.profiler import (ProfileOptions as ProfileOptions, StepTraceAnnotation as StepTraceAnnotation,
                            TraceAnnotation as TraceAnnotation, annotate_function as annotate_function,
                            start_trace as start_trace, stop_trace as stop_trace, trace as trace)

__all__ = ["ProfileOptions", "StepTraceAnnotation", "TraceAnnotation", "annotate_function", "start_trace",
           "stop_trace", "trace"]
