"""Code shipped into the sandbox as files (standard library only)."""
