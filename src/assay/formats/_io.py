"""Reading dataset files: JSON Lines (optionally gzip) or a JSON array."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from ..errors import ValidationError


def read_records(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        raise ValidationError("dataset", f"{p} does not exist")
    if p.suffix == ".gz":
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = p.read_text(encoding="utf-8")
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            data = json.loads(text)
        else:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ValidationError("dataset", f"{p}: not JSON or JSON Lines ({exc})") from exc
    if not all(isinstance(r, dict) for r in data):
        raise ValidationError("dataset", f"{p}: every record must be an object")
    records: list[dict[str, Any]] = data
    return records
