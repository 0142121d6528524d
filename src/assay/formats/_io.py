"""Reading dataset files: JSON Lines (optionally gzip) or a JSON array."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from ..errors import ValidationError


def read_records(path: str | Path, what: str = "dataset") -> list[dict[str, Any]]:
    """The records of a JSON Lines file (gzip if it ends in .gz) or of a JSON array; errors
    name ``what`` the file is (``dataset``, ``samples``) and the line at fault."""
    p = Path(path)
    if not p.exists():
        raise ValidationError(what, f"{p} does not exist")
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = p.read_text(encoding="utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ValidationError(what, f"{p}: cannot be read ({exc})") from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(what, f"{p}: not a JSON array ({exc})") from None
        if not isinstance(data, list):
            raise ValidationError(what, f"{p}: not a JSON array")
    else:
        data = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValidationError(what, f"{p} line {n}: not JSON ({exc.msg})") from None
    for n, record in enumerate(data, start=1):
        if not isinstance(record, dict):
            raise ValidationError(what, f"{p}: record {n} is not a JSON object")
    records: list[dict[str, Any]] = data
    return records
