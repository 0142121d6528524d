"""Code that runs in the fork server (zygote) and in sandboxed children.

Standard library only: the zygote is started with the sandbox interpreter (Debian's
``/usr/bin/python3`` by default), not with Assay's virtual environment. Nothing here may
import ``assay`` modules outside this package.
"""
