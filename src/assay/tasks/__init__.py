"""Agent tasks: the native JSONL format, SWE-bench-style rows, repair tasks from samples."""

from .patch import PatchLines, diff_size, parse_patch, unified_diff
from .types import AgentTask, dump_tasks, files_from_tar, load_tasks, tar_of

__all__ = [
    "AgentTask",
    "PatchLines",
    "diff_size",
    "dump_tasks",
    "files_from_tar",
    "load_tasks",
    "parse_patch",
    "tar_of",
    "unified_diff",
]
