"""Adapters for learning libraries, each importing its library only when used (docs/interop.md)."""
