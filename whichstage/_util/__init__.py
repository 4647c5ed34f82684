"""_util."""
