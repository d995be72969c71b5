"""`fluxion.experimental.checkify` (mirrors the user-check part of `jax.experimental.checkify`).

See `fluxion/_src/checkify.py` for how errors are carried and what is not offered.
"""

from .._src.checkify import (Error as Error, FailedCheckError as FailedCheckError,
                             JaxRuntimeError as JaxRuntimeError, check as check, checkify as checkify,
                             user_checks as user_checks)

__all__ = ["Error", "FailedCheckError", "JaxRuntimeError", "check", "checkify", "user_checks"]
