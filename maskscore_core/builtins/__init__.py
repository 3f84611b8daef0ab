"""Plugins shipped with the core; they use the same hooks as third-party plugins."""
