"""Settings for the whole test session."""

from __future__ import annotations

import signal


def pytest_configure(config) -> None:
    # A non-interactive shell starts its background jobs with SIGINT ignored (CI may run the tests so), and exec
    # keeps an ignored signal: every program a test starts would then ignore Ctrl-C, and the tests that send it one
    # would wait. Give the session the default a terminal gives, which the programs it starts inherit.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
