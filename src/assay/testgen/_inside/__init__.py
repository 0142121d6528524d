"""Scripts shipped into the sandbox (run by its interpreter, never imported on the host)."""
