"""Code that runs inside a session's sandbox (stdlib only, shipped as files of the run)."""
