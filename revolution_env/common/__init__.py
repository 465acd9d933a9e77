"""Layer 0, the helpers every layer may use: atomic file writes (``files``), worker processes, the cores and the
stop signals (``workers``), and Numba's ``jit`` where it is installed (``jit``)."""
