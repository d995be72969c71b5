"""`fluxion.distributed`: join an MPI world so `pmap` collectives span processes (mirrors `jax.distributed`).

    mpirun -n 2 python train.py       # train.py calls fluxion.distributed.initialize() first

See `fluxion._src.distributed` for requirements (mpi4py + an MPI library) and failure handling.
"""

from ._src.distributed import (DistributedError as DistributedError,
                               DistributedTimeoutError as DistributedTimeoutError, initialize as initialize,
                               is_initialized as is_initialized, shutdown as shutdown)
